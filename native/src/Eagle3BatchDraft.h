// Eagle3BatchDraft: the drafts of several slots of one head context in shared decodes, as a target's
// slots are verified in shared steps: every slot's catch-up in one or two llama_decode calls, then
// draft iteration k decodes one pair per slot still drafting. Each slot's tokens come from its own
// rows (its argmax, its logits, or a draw with its own uniforms), so a draft is the one its slot would
// have made alone.
#pragma once

#include "Eagle3Draws.h"
#include "Eagle3HeadState.h"
#include "chooseIndex.h"
#include "samplerRow.h"

#include <algorithm>
#include <string>
#include <vector>

namespace specgate {

/** What one slot asks of a shared draft, and what it got. */
struct SlotDraft {
    /** Greedy ids, the first draft position's logits (count 1), or tokens drawn with `uniforms`. */
    enum class Kind { Ids, Row, Drawn };
    Eagle3HeadState* head = nullptr;
    std::vector<llama_token> history;
    Kind kind = Kind::Ids;
    /** Tokens to draft (Ids), or uniforms.size() (Drawn). */
    int32_t count = 1;
    std::vector<double> uniforms;
    HeadDrawSettings settings;
    // Results.
    std::vector<int32_t> ids;
    std::vector<double> logits;
    HeadDraws drawn;
    /** Why there is no draft (the tap lacks the rows the head needs); empty: there is one. */
    std::string unavailable;
    /** Drafting (its catch-up decoded, tokens still to give). */
    bool active = false;
    /** Tokens given so far. */
    int32_t given = 0;
};

namespace batchDraft {

/** Reads the pre-norm row of batch index `index` (an output) into the slot's head, whose logits LastLogits then reads. */
inline bool ReadRow(Eagle3HeadState& batch, Eagle3HeadState& head, int32_t index, std::string& error) {
    const float* row = llama_get_embeddings_nextn_ith(batch.context, index);
    if (row == nullptr) {
        error = "the EAGLE-3 head gave no pre-norm row";
        return false;
    }
    head.prenorm.assign(row, row + head.width);
    head.row = index;
    return true;
}

/** The slot's next token from its head's last row; false with `error` set on a bad row; `more`: feed it to draft another. */
inline bool Give(SlotDraft& slot, std::vector<double>& scratch, llama_token& token, bool& more, std::string& error) {
    Eagle3HeadState& head = *slot.head;
    const auto index = static_cast<size_t>(slot.given);
    more = false;
    if (slot.kind == SlotDraft::Kind::Row) {
        slot.logits.resize(static_cast<size_t>(head.vocabulary));
        int32_t ignored = 0;
        return head.Row(slot.logits.data(), ignored, error);
    }
    if (slot.kind == SlotDraft::Kind::Ids) {
        if (!head.Row(nullptr, token, error)) return false;
        slot.ids.push_back(token);
        more = ++slot.given < slot.count;
        return true;
    }
    const size_t size = slot.settings.size;
    const float* row = head.LastLogits(error);
    if (row == nullptr) return false;
    double* probabilities = slot.drawn.probabilities.data() + index * size;
    const std::string invalid = processRow(row, probabilities, size, slot.settings.sampling, scratch);
    if (!invalid.empty()) {
        error = "the EAGLE-3 head's row " + std::to_string(index) + ": " + invalid;
        return false;
    }
    if (slot.settings.minConfidence > 0 && *std::max_element(probabilities, probabilities + size) < slot.settings.minConfidence)
        return true;
    if (!slot.settings.withoutLogits) std::copy(row, row + size, slot.drawn.logits.begin() + static_cast<std::ptrdiff_t>(index * size));
    token = chooseIndex(probabilities, size, slot.uniforms[index]);
    slot.drawn.ids[index] = token;
    if (token < 0) {
        error = "the EAGLE-3 head's row " + std::to_string(index) + " has no positive probability";
        return false;
    }
    more = ++slot.given < slot.count;
    return true;
}

/**
 * Every active slot's g rows, each slot's target rows in its own run of the encoder: the same runs a
 * head of its own makes, so its rows are the same to the last bit (a run of another size may take
 * another kernel path).
 */
inline bool Encode(Eagle3HeadState& batch, std::vector<SlotDraft>& slots, std::vector<Eagle3HeadState::Catchup>& catchups,
                   std::string& error) {
    for (size_t slot = 0; slot < slots.size(); slot++)
        if (slots[slot].active && !batch.Encode(catchups[slot].rows, catchups[slot].tokens.size(), catchups[slot].g, error)) return false;
    return true;
}

/** Decodes every active slot's catch-up: pairs that decode without outputs in one batch, then the rest (boundaries last) in another. */
inline bool CatchUp(Eagle3HeadState& batch, std::vector<SlotDraft>& slots, std::vector<Eagle3HeadState::Catchup>& catchups,
                    std::string& error) {
    const auto add = [&](size_t slot, size_t index, bool output) {
        const Eagle3HeadState::Catchup& catchup = catchups[slot];
        batch.Add(catchup.tokens[index], catchup.g.data() + index * static_cast<size_t>(batch.width), catchup.positions[index], output,
                  slots[slot].head->slot);
    };
    batch.ClearBatch();
    for (size_t slot = 0; slot < slots.size(); slot++)
        if (slots[slot].active)
            for (size_t index = 0; index < catchups[slot].early; index++) add(slot, index, false);
    if (!batch.tokens.empty() && !batch.Decode(error, false)) return false;
    batch.ClearBatch();
    std::vector<int32_t> last(slots.size(), -1);
    for (size_t slot = 0; slot < slots.size(); slot++) {
        if (!slots[slot].active) continue;
        for (size_t index = catchups[slot].early; index < catchups[slot].tokens.size(); index++) add(slot, index, true);
        last[slot] = static_cast<int32_t>(batch.tokens.size()) - 1;
    }
    if (batch.tokens.empty()) return true;
    if (!batch.Decode(error, false)) return false;
    // Every pair of this batch is an output; only each slot's boundary row is read.
    batch.copiedFloats += static_cast<double>(batch.tokens.size()) * (batch.vocabulary + batch.width);
    for (size_t slot = 0; slot < slots.size(); slot++) {
        if (!slots[slot].active) continue;
        if (!ReadRow(batch, *slots[slot].head, last[slot], error)) return false;
        slots[slot].head->Commit(slots[slot].history);
    }
    return true;
}

} // namespace batchDraft

/**
 * Drafts for every slot (distinct head sequences of `batch`'s context; `batch` lends its batch
 * buffers): catch-ups together, then one decode per draft iteration holding one pair of every slot
 * still drafting. False with `error` set when a decode fails or a row is invalid; a slot whose rows
 * the tap lacks gets `unavailable` and no draft.
 */
inline bool draftTogether(Eagle3HeadState& batch, std::vector<SlotDraft>& slots, std::string& error) {
    std::vector<Eagle3HeadState::Catchup> catchups(slots.size());
    for (size_t index = 0; index < slots.size(); index++) {
        SlotDraft& slot = slots[index];
        if (slot.kind == SlotDraft::Kind::Drawn) {
            slot.count = static_cast<int32_t>(slot.uniforms.size());
            slot.drawn.ids.assign(slot.uniforms.size(), -1);
            slot.drawn.size = slot.settings.size;
            slot.drawn.probabilities.assign(slot.uniforms.size() * slot.settings.size, 0);
            slot.drawn.logits.assign(slot.settings.withoutLogits ? 0 : slot.uniforms.size() * slot.settings.size, 0);
        }
        slot.active = slot.head->Prepare(slot.history, catchups[index]);
        if (!slot.active)
            slot.unavailable =
                "the target's hidden states for positions below " + std::to_string(slot.history.size() - 1) + " were not captured";
    }
    if (!batchDraft::Encode(batch, slots, catchups, error) || !batchDraft::CatchUp(batch, slots, catchups, error)) return false;
    std::vector<double> scratch;
    std::vector<SlotDraft*> stepping;
    while (true) {
        batch.ClearBatch();
        stepping.clear();
        for (SlotDraft& slot : slots) {
            if (!slot.active) continue;
            llama_token token = -1;
            bool more = false;
            if (!batchDraft::Give(slot, scratch, token, more, error)) return false;
            slot.active = more;
            if (!more) continue;
            Eagle3HeadState& head = *slot.head;
            if (head.next >= head.contextSize) {
                error = "the EAGLE-3 head's context of " + std::to_string(head.contextSize) + " positions is full";
                return false;
            }
            batch.Add(token, head.prenorm.data(), head.next, true, head.slot);
            stepping.push_back(&slot);
        }
        if (stepping.empty()) return true;
        if (!batch.Decode(error, false)) return false;
        batch.copiedFloats += static_cast<double>(stepping.size()) * (batch.vocabulary + batch.width);
        for (size_t index = 0; index < stepping.size(); index++) {
            Eagle3HeadState& head = *stepping[index]->head;
            if (!batchDraft::ReadRow(batch, head, static_cast<int32_t>(index), error)) return false;
            head.next++;
        }
    }
}

} // namespace specgate
