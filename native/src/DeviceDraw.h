// DeviceDraw: the last link of a device sampler chain — picks the token id inside the graph and leaves little else to copy.
#pragma once

#include <ggml-backend.h>
#include <ggml.h>
#include <llama.h>

#include "DeviceResidual.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace specgate {

/**
 * A backend sampler (llama.cpp's experimental backend sampling) ending a chain: the argmax of the row
 * the links before it left (Mode::Argmax), or an inverse-CDF draw from it with a uniform given per row
 * (Mode::Draw): softmax, cumulative sum, the first id whose cumulative probability exceeds the
 * uniform, mapped through the candidates a top-k or top-p link reordered. That is specgate's host rule
 * (SeededChance.choose) in float32 and in the order of the candidates. Mode::Verify serves lossless
 * verification of a draft without probabilities (q = δ at the drafted id x, given per row, −1 for
 * none): the row's probability of x (the one float its probabilities hold) and a draw from the row
 * with x removed (the residual max(0, p − δ_x), normalised).
 *
 * llama.cpp copies to the host every tensor a chain leaves in its sampler data: the row's logits (V
 * floats, set even when no link changed them), probabilities and candidates. This link keeps only the
 * id (and, for Verify, the one probability), so 4 (8) bytes per row leave the device. Scored, Candidates
 * and Gather serve verification of a draft model's tokens (DeviceResidual.h): `width` K values per row.
 *
 * The uniforms come from the caller (its seeded generator), one per row in batch order, set before
 * each decode (SetUniforms); llama.cpp builds one draw node per row and sets the inputs per ubatch, in
 * the same order, so a cursor hands them out.
 */
class DeviceDraw {
public:
    enum class Mode : uint8_t { Argmax, Draw, Verify, Scored, Candidates, Gather };

    explicit DeviceDraw(Mode mode, uint32_t width = 1) : mode(mode), width(width) {}

    /** A new llama_sampler owning a DeviceDraw (freed with it; e.g. by the chain it is added to). */
    static llama_sampler* Create(Mode mode, DeviceDraw** created, uint32_t width = 1) {
        auto* draw = new DeviceDraw(mode, width);
        if (created != nullptr) *created = draw;
        return llama_sampler_init(&interface, draw);
    }

    /** Whether llama.cpp initialised this link for the backend (every link before it runs there too). */
    bool OnDevice() const { return onDevice; }

    /** The uniforms of this decode's rows of the sequence, in batch order. */
    void SetUniforms(const std::vector<double>& values) {
        uniforms.resize(values.size());
        for (size_t index = 0; index < values.size(); index++)
            uniforms[index] = std::min(static_cast<float>(values[index]), largestUniform);
        cursor = 0;
    }

    /**
     * Whether the graphs built from now on leave the row's logits for llama.cpp to copy (V floats per row,
     * read with llama_get_sampled_logits_ith): for a chain that stays attached while its sequence asks for rows.
     */
    void KeepRow(bool keep) { keepRow = keep; }

    /** Verify: the drafted id of each of this decode's rows of the sequence, in batch order (−1: none). */
    void SetDrafted(const std::vector<int32_t>& ids) {
        drafted.assign(ids.begin(), ids.end());
        draftedCursor = 0;
    }

    /** 1 − 2⁻²³: a float u at most this keeps u × total below any float total (a double u near 1 rounds to 1.0f). */
    static constexpr float largestUniform = 1.0f - 1.0f / 8388608.0f;

private:
    Mode mode;
    uint32_t width; // Candidates: uniforms per row; Gather: ids per row
    bool onDevice = false;
    bool keepRow = false;
    std::vector<ggml_tensor*> inputs;        // the draw nodes' uniforms, one per row of the graph built last
    std::vector<ggml_tensor*> draftedInputs; // Verify: the drafted id per row, as a float (ids < 2²⁴ are exact)
    std::vector<float> uniforms;
    std::vector<int32_t> drafted;
    size_t cursor = 0;
    size_t draftedCursor = 0;
    ggml_tensor* candidateIds = nullptr; // Candidates: the row's K drawn ids, left as its candidates (BuildResidualRow)
    ResidualOutputPool pool;             // residual rows' outputs, one tensor per graph

    static DeviceDraw* Of(const llama_sampler* sampler) { return static_cast<DeviceDraw*>(sampler->ctx); }

    static const char* Name(const llama_sampler* sampler) {
        const Mode mode = Of(sampler)->mode;
        return mode == Mode::Argmax   ? "specgate-argmax"
               : mode == Mode::Draw   ? "specgate-draw"
               : mode == Mode::Verify ? "specgate-verify"
                                      : "specgate-residual";
    }

    /** On the host this link does nothing: it is used only where the whole chain runs in the graph. */
    static void Apply(llama_sampler*, llama_token_data_array*) {}

    static void Free(llama_sampler* sampler) { delete Of(sampler); }

    static bool BackendInit(llama_sampler* sampler, ggml_backend_buffer_type_t type, uint32_t rows) {
        DeviceDraw* draw = Of(sampler);
        draw->pool.SetRows(rows);
        draw->onDevice = Supported(*draw, type);
        return draw->onDevice;
    }

    /** Whether the device that holds the logits runs every op of the draw (a CPU buffer: always). */
    static bool Supported(DeviceDraw& draw, ggml_backend_buffer_type_t type) {
        ggml_backend_dev_t device = ggml_backend_buft_get_device(type);
        if (device == nullptr || ggml_backend_dev_type(device) == GGML_BACKEND_DEVICE_TYPE_CPU) return true;
        constexpr size_t nodes = 128; // a residual row (DeviceResidual.h) builds about 55 tensors
        ggml_init_params params = {nodes * ggml_tensor_overhead() + ggml_graph_overhead_custom(nodes, false), nullptr, true};
        ggml_context* probe = ggml_init(params);
        if (probe == nullptr) return false;
        ggml_cgraph* graph = ggml_new_graph_custom(probe, nodes, false);
        llama_sampler_data data = {ggml_new_tensor_1d(probe, GGML_TYPE_F32, 1024), nullptr, nullptr,
                                   ggml_new_tensor_1d(probe, GGML_TYPE_I32, 1024)};
        ggml_tensor* drawnProbability = draw.Build(probe, &data);
        ggml_build_forward_expand(graph, data.sampled);
        if (drawnProbability != nullptr) ggml_build_forward_expand(graph, drawnProbability);
        bool supported = true;
        for (int index = 0; index < ggml_graph_n_nodes(graph) && supported; index++)
            supported = ggml_backend_dev_supports_op(device, ggml_graph_node(graph, index));
        draw.inputs.clear();
        draw.draftedInputs.clear();
        draw.candidateIds = nullptr;
        draw.pool.Reset();
        ggml_free(probe);
        return supported;
    }

    static void BackendApply(llama_sampler* sampler, ggml_context* context, ggml_cgraph*, llama_sampler_data* data) {
        ggml_tensor* row = data->logits;
        ggml_tensor* draftedProbability = Of(sampler)->Build(context, data);
        // What llama.cpp would copy besides the id: the row (V floats), its probabilities, its candidates
        // (Verify: the one probability of the drafted id instead). KeepRow leaves the row to copy.
        data->logits = Of(sampler)->keepRow ? row : nullptr;
        data->probs = draftedProbability;
        data->candidates = Of(sampler)->candidateIds;
        Of(sampler)->candidateIds = nullptr;
    }

    /** Sets data->sampled; Verify returns the drafted id's probability (a 1-element tensor), the others null. */
    ggml_tensor* Build(ggml_context* context, llama_sampler_data* data) {
        ggml_tensor* logits = ggml_reshape_1d(context, data->logits, ggml_nelements(data->logits));
        if (mode == Mode::Scored || mode == Mode::Candidates || mode == Mode::Gather) return BuildResidualRow(context, data, logits);
        ggml_tensor* draftedProbability = nullptr;
        ggml_tensor* index = nullptr;
        if (mode == Mode::Argmax) {
            index = ggml_argmax(context, logits);
        } else if (mode == Mode::Draw) {
            index = DrawIndex(context, logits);
        } else {
            // 1 at the drafted id's place among the candidates (the row's ids in order without them), else 0.
            const int64_t length = logits->ne[0];
            ggml_tensor* ids = data->candidates != nullptr
                                   ? ggml_cast(context, ggml_reshape_1d(context, data->candidates, length), GGML_TYPE_F32)
                                   : ggml_arange(context, 0.0f, static_cast<float>(length), 1.0f);
            ggml_tensor* draftedId = ggml_new_tensor_1d(context, GGML_TYPE_F32, 1);
            ggml_format_name(draftedId, "specgate_drafted_%zu", draftedInputs.size());
            ggml_set_input(draftedId);
            draftedInputs.push_back(draftedId);
            ggml_tensor* distance = ggml_abs(context, ggml_sub(context, ids, draftedId));
            ggml_tensor* isDrafted = ggml_step(context, ggml_scale_bias(context, distance, -1.0f, 0.5f));
            draftedProbability = ggml_sum(context, ggml_mul(context, ggml_soft_max(context, logits), isDrafted));
            // The residual: the drafted id's logit at −∞ (log 0), the others unchanged (log 1).
            ggml_tensor* residual = ggml_add(context, logits, ggml_log(context, ggml_scale_bias(context, isDrafted, -1.0f, 1.0f)));
            index = DrawIndex(context, residual);
        }
        if (data->candidates != nullptr) {
            ggml_tensor* candidates = ggml_reshape_2d(context, data->candidates, 1, ggml_nelements(data->candidates));
            index = ggml_reshape_1d(context, ggml_get_rows(context, candidates, index), 1);
        }
        data->sampled = index;
        return draftedProbability;
    }

    /** Scored, Candidates, Gather (DeviceResidual.h): sets data->sampled, returns the values copied beside it. */
    ggml_tensor* BuildResidualRow(ggml_context* context, llama_sampler_data* data, ggml_tensor* logits) {
        const ResidualKind kind = mode == Mode::Scored       ? ResidualKind::Scored
                                  : mode == Mode::Candidates ? ResidualKind::Candidates
                                                             : ResidualKind::Gather;
        auto input = [&](std::vector<ggml_tensor*>& into, const char* name, int64_t length) {
            ggml_tensor* tensor = ggml_new_tensor_1d(context, GGML_TYPE_F32, length);
            ggml_format_name(tensor, "%s_%zu", name, into.size());
            ggml_set_input(tensor);
            into.push_back(tensor);
            return tensor;
        };
        ggml_tensor* uniforms =
            kind == ResidualKind::Gather ? nullptr : input(inputs, "specgate_uniforms", kind == ResidualKind::Scored ? 1 : width);
        ggml_tensor* ids = kind == ResidualKind::Candidates ? input(draftedInputs, "specgate_ids", 1)
                           : width == 0                     ? nullptr
                                                            : input(draftedInputs, "specgate_ids", width);
        ggml_tensor* candidates = data->candidates != nullptr ? ggml_reshape_1d(context, data->candidates, logits->ne[0]) : nullptr;
        const ResidualOutputs outputs = pool.Place(context, BuildResidual(context, kind, logits, candidates, uniforms, ids));
        data->sampled = outputs.sampled;
        candidateIds = outputs.ids;
        return outputs.values;
    }

    /** The inverse-CDF draw from `logits` with this row's uniform: the index (into the row) of the id drawn. */
    ggml_tensor* DrawIndex(ggml_context* context, ggml_tensor* logits) {
        ggml_tensor* uniform = ggml_new_tensor_1d(context, GGML_TYPE_F32, 1);
        ggml_format_name(uniform, "specgate_uniform_%zu", inputs.size());
        ggml_set_input(uniform);
        inputs.push_back(uniform);
        const int64_t length = logits->ne[0];
        ggml_tensor* cumulative = ggml_cumsum(context, ggml_soft_max(context, logits));
        // The host's rule: target = u × total, then the first id whose cumulative sum exceeds it. With u ≤ 1 − 2⁻²³
        // (SetUniforms) the target stays below the total, so the id found has a positive probability.
        ggml_tensor* total = ggml_view_1d(context, cumulative, 1, static_cast<size_t>(length - 1) * cumulative->nb[0]);
        ggml_tensor* target = ggml_mul(context, uniform, total);
        // 1 where the cumulative sum exceeds the target: their count locates the first such id.
        ggml_tensor* above = ggml_sum(context, ggml_step(context, ggml_sub(context, cumulative, target)));
        above = ggml_clamp(context, above, 1.0f, static_cast<float>(length));
        return ggml_cast(context, ggml_scale_bias(context, above, -1.0f, static_cast<float>(length)), GGML_TYPE_I32);
    }

    static void BackendSetInput(llama_sampler* sampler) {
        DeviceDraw* draw = Of(sampler);
        std::vector<float> values;
        for (ggml_tensor* input : draw->inputs) {
            // A row without a uniform (none given: never read) gets 0.5 rather than memory left from another decode.
            values.assign(static_cast<size_t>(ggml_nelements(input)), 0.5f);
            for (float& value : values)
                if (draw->cursor < draw->uniforms.size()) value = draw->uniforms[draw->cursor++];
            ggml_backend_tensor_set(input, values.data(), 0, values.size() * sizeof(float));
        }
        for (ggml_tensor* input : draw->draftedInputs) {
            values.assign(static_cast<size_t>(ggml_nelements(input)), -1.0f);
            for (float& value : values)
                if (draw->draftedCursor < draw->drafted.size()) value = static_cast<float>(draw->drafted[draw->draftedCursor++]);
            ggml_backend_tensor_set(input, values.data(), 0, values.size() * sizeof(float));
        }
    }

    static void BackendReset(llama_sampler* sampler) {
        Of(sampler)->inputs.clear();
        Of(sampler)->draftedInputs.clear();
        Of(sampler)->pool.Reset();
    }

    static inline llama_sampler_i interface = {
        /* .name              = */ Name,
        /* .accept            = */ nullptr,
        /* .apply             = */ Apply,
        /* .reset             = */ nullptr,
        /* .clone             = */ nullptr,
        /* .free              = */ Free,
        /* .backend_init      = */ BackendInit,
        /* .backend_accept    = */ nullptr,
        /* .backend_apply     = */ BackendApply,
        /* .backend_set_input = */ BackendSetInput,
        /* .backend_reset     = */ BackendReset,
        /* .copy_state        = */ nullptr,
    };
};

} // namespace specgate
