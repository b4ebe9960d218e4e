// NativeGrammar (llama.cpp's grammar sampler over a model's vocabulary) and jsonSchemaToGrammar
// (llama.cpp's common/json-schema-to-grammar.cpp, compiled into the addon from LLAMA_CPP_DIR).
//
// Everything here runs on the JS thread: a grammar is advanced token by token by one generation. Each
// call is short but a mask over a whole large vocabulary: llama.cpp matches every token's text against
// the grammar's stacks (at 152k tokens, 10–35 ms on one core; microseconds for a row already cut to a
// few candidates, or for allows on one token). Every argument is checked before it
// reaches llama.cpp, whose grammar code aborts the process on a state it does not expect: accepting a
// token the grammar does not allow (an end-of-generation token where the grammar cannot end aborts; any
// other throws after emptying the grammar's stacks, and the next apply would abort). So accept() checks
// the token against the grammar first, and a grammar whose accept failed anyway is dropped.
//
// Beyond llama.cpp's grammar, a NativeGrammar refuses control tokens (detokenized as nothing) and
// holds the accepted bytes to strict UTF-8 (VocabularyTable), so the text specgate detokenizes is the
// text the grammar matched.
#include "NativeGrammar.h"

#include <llama.h>

#include "NativeModel.h"
#include "runtime.h"
#include "validate.h"

#include "json-schema-to-grammar.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace specgate {
namespace {

/** Deepest nesting of arrays and objects jsonSchemaToGrammar reads: the converter recurses once per level. */
constexpr int maxSchemaDepth = 256;
/**
 * Most "$ref" keys jsonSchemaToGrammar reads: the converter also recurses once per reference it
 * follows, so a chain of $defs each referring to the next nests as deep as it is long (20,000
 * overflow the stack of Node's main thread; 2,000 convert in 30 ms).
 */
constexpr size_t maxSchemaReferences = 1000;

/** Occurrences of `needle` in `text` (counted in strings too: an upper bound). */
size_t occurrences(const std::string& text, const std::string& needle) {
    size_t count = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) count++;
    return count;
}

/**
 * The deepest nesting of `[` and `{` in JSON text, outside strings (the text need not be valid JSON:
 * the parser judges that after). Counted before parsing, so a hostile schema nested a million levels
 * deep is refused instead of overflowing the converter's recursion.
 */
int nestingDepth(const std::string& text) {
    int depth = 0;
    int deepest = 0;
    bool inString = false;
    for (size_t index = 0; index < text.size(); index++) {
        const char c = text[index];
        if (inString) {
            if (c == '\\')
                index++;
            else if (c == '"')
                inString = false;
        } else if (c == '"') {
            inString = true;
        } else if (c == '[' || c == '{') {
            deepest = std::max(deepest, ++depth);
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return deepest;
}

/**
 * jsonSchemaToGrammar(schemaJson: string) → GBNF whose root rule is "root": llama.cpp's
 * json_schema_to_grammar, as llama-server converts `json_schema` and `response_format`. Invalid JSON is
 * an Error ("schema is not valid JSON: …"); a schema the converter refuses (an unknown type, an
 * unresolvable $ref, a malformed keyword) an Error with its message; one deeper or with more references
 * than it can recurse through, a RangeError. Keywords it does not know it ignores, and a `pattern` it cannot
 * translate becomes "any string" with a warning on stderr: src/constraints/jsonSchemaGrammar.ts
 * refuses both before calling this.
 */
Napi::Value JsonSchemaToGrammar(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const std::string text = stringArgument(env, info[0], "schema");
    if (nestingDepth(text) > maxSchemaDepth)
        throwRangeError(env, "schema is nested deeper than " + std::to_string(maxSchemaDepth) + " levels");
    if (occurrences(text, "\"$ref\"") > maxSchemaReferences)
        throwRangeError(env, "schema has more than " + std::to_string(maxSchemaReferences) + " $ref keys");
    common_json schema;
    try {
        schema = common_json::parse(text);
    } catch (const std::exception& error) {
        throw Napi::Error::New(env, std::string("schema is not valid JSON: ") + error.what());
    }
    try {
        return Napi::String::New(env, json_schema_to_grammar(schema, /* force_gbnf= */ true));
    } catch (const std::exception& error) {
        throw Napi::Error::New(env, error.what());
    }
}

napi_value JsonSchemaToGrammarEntry(napi_env env, napi_callback_info callbackInfo) {
    return guarded(env, [&]() -> napi_value { return JsonSchemaToGrammar(Napi::CallbackInfo(env, callbackInfo)); });
}

/** The states of a strict UTF-8 decoder between bytes (Unicode's table 3-7), and its dead state. */
enum Utf8State : uint8_t {
    Ground,       // at a character boundary
    Need1,        // one more continuation byte, 80–BF
    Need2,        // two more, the next 80–BF
    Need2AfterE0, // two more, the next A0–BF (no overlong forms)
    Need2AfterED, // two more, the next 80–9F (no surrogates)
    Need3,        // three more, the next 80–BF
    Need3AfterF0, // three more, the next 90–BF (no overlong forms)
    Need3AfterF4, // three more, the next 80–8F (nothing beyond U+10FFFF)
    Utf8States,
    Invalid = 0xff
};

uint8_t nextUtf8State(uint8_t state, uint8_t byte) {
    const auto within = [byte](uint8_t low, uint8_t high) { return low <= byte && byte <= high; };
    switch (state) {
    case Ground:
        if (byte < 0x80) return Ground;
        if (within(0xc2, 0xdf)) return Need1;
        if (byte == 0xe0) return Need2AfterE0;
        if (byte == 0xed) return Need2AfterED;
        if (within(0xe1, 0xef)) return Need2;
        if (byte == 0xf0) return Need3AfterF0;
        if (within(0xf1, 0xf3)) return Need3;
        if (byte == 0xf4) return Need3AfterF4;
        return Invalid;
    case Need1:
        return within(0x80, 0xbf) ? Ground : Invalid;
    case Need2:
        return within(0x80, 0xbf) ? Need1 : Invalid;
    case Need2AfterE0:
        return within(0xa0, 0xbf) ? Need1 : Invalid;
    case Need2AfterED:
        return within(0x80, 0x9f) ? Need1 : Invalid;
    case Need3:
        return within(0x80, 0xbf) ? Need2 : Invalid;
    case Need3AfterF0:
        return within(0x90, 0xbf) ? Need2 : Invalid;
    case Need3AfterF4:
        return within(0x80, 0x8f) ? Need2 : Invalid;
    default:
        return Invalid;
    }
}

/** What a token is to a grammar, besides its text. */
enum TokenKind : uint8_t {
    Text,
    /** Control or unknown (not end-of-generation): rendered as nothing by detokenize. */
    Silent,
    EndOfGeneration
};

/**
 * What NativeGrammar adds to llama.cpp's grammar, per token of a vocabulary (computed once per model
 * and shared). llama.cpp matches a token by its piece rendered with special tokens as text
 * ("<|im_end|>"), but specgate detokenizes with control and unknown tokens rendered as nothing
 * (NativeModel.detokenize): such a token could match inside a JSON string and then vanish from the
 * text, so it is refused (end-of-generation tokens excepted: the grammar allows them only where it may
 * end). And llama.cpp's grammar decodes UTF-8 leniently: split across byte tokens, an overlong form, a
 * surrogate or a code point beyond U+10FFFF passes its character classes, then detokenizes to U+FFFD
 * replacement characters (a string longer than its maxLength). So the bytes of accepted tokens are held
 * to strict UTF-8: `utf8[token * Utf8States + state]` is the decoder's state after the token's piece,
 * from `state`.
 */
struct VocabularyTable {
    std::vector<uint8_t> kinds;
    std::vector<uint8_t> utf8;
};

VocabularyTable buildVocabularyTable(const ModelHandle& model) {
    VocabularyTable table;
    const auto size = static_cast<size_t>(model.vocabularySize);
    table.kinds.assign(size, Text);
    table.utf8.assign(size * Utf8States, Invalid);
    std::vector<char> piece(64);
    for (llama_token token = 0; token < model.vocabularySize; token++) {
        const auto index = static_cast<size_t>(token);
        if (llama_vocab_is_eog(model.vocab, token)) {
            table.kinds[index] = EndOfGeneration;
            continue;
        }
        if ((llama_vocab_get_attr(model.vocab, token) & (LLAMA_TOKEN_ATTR_CONTROL | LLAMA_TOKEN_ATTR_UNKNOWN)) != 0) {
            table.kinds[index] = Silent;
            continue;
        }
        // The piece as llama.cpp's grammar reads it (special = true; the same text for a non-control token).
        int32_t length = llama_token_to_piece(model.vocab, token, piece.data(), static_cast<int32_t>(piece.size()), 0, true);
        if (length < 0) {
            piece.resize(static_cast<size_t>(-length));
            length = llama_token_to_piece(model.vocab, token, piece.data(), static_cast<int32_t>(piece.size()), 0, true);
        }
        for (uint8_t start = 0; start < Utf8States; start++) {
            uint8_t state = start;
            for (int32_t byte = 0; byte < length && state != Invalid; byte++)
                state = nextUtf8State(state, static_cast<uint8_t>(piece[static_cast<size_t>(byte)]));
            table.utf8[index * Utf8States + start] = state;
        }
    }
    return table;
}

/**
 * The table of `model`, built on first use and shared while any grammar over the model lives (a
 * 152k-token vocabulary takes milliseconds to scan; a request's grammar should not pay that each time).
 */
std::shared_ptr<const VocabularyTable> vocabularyTableOf(const std::shared_ptr<ModelHandle>& model) {
    static std::mutex mutex;
    static std::map<const ModelHandle*, std::weak_ptr<const VocabularyTable>> tables;
    std::lock_guard<std::mutex> lock(mutex);
    // An expired entry may name a freed model whose address a new one reuses: rebuilt then.
    std::shared_ptr<const VocabularyTable> table = tables[model.get()].lock();
    if (table == nullptr) {
        for (auto entry = tables.begin(); entry != tables.end();) entry = entry->second.expired() ? tables.erase(entry) : std::next(entry);
        table = std::make_shared<const VocabularyTable>(buildVocabularyTable(*model));
        tables[model.get()] = table;
    }
    return table;
}

/** A grammar sampler, the model whose vocabulary it reads (kept alive by it), and mask's buffer. */
struct GrammarState {
    std::shared_ptr<ModelHandle> model;
    std::shared_ptr<const VocabularyTable> table;
    llama_sampler* sampler = nullptr;
    /** The strict UTF-8 decoder's state after the tokens accepted so far. */
    uint8_t utf8 = Ground;
    /** mask's candidates, reused from call to call. */
    std::vector<llama_token_data> candidates;

    GrammarState() = default;
    GrammarState(const GrammarState&) = delete;
    GrammarState& operator=(const GrammarState&) = delete;
    // The sampler reads the model's vocabulary: freed first (members are destroyed after the body).
    ~GrammarState() {
        if (sampler != nullptr) llama_sampler_free(sampler);
    }

    /** Whether `token` passes what NativeGrammar adds to the grammar (VocabularyTable). */
    bool Admissible(llama_token token) const {
        const auto index = static_cast<size_t>(token);
        switch (table->kinds[index]) {
        case Silent:
            return false;
        case EndOfGeneration:
            return utf8 == Ground;
        default:
            return table->utf8[index * Utf8States + utf8] != Invalid;
        }
    }

    /** True when `token` (in range) may come next: admissible, and the grammar applied to it alone leaves its logit finite. */
    bool Allows(llama_token token) {
        if (!Admissible(token)) return false;
        llama_token_data candidate{token, 0.0f, 0.0f};
        llama_token_data_array array{&candidate, 1, -1, false};
        llama_sampler_apply(sampler, &array);
        return std::isfinite(candidate.logit);
    }

    /** Follows an accepted token's bytes. */
    void Advance(llama_token token) {
        const auto index = static_cast<size_t>(token);
        if (table->kinds[index] == Text) utf8 = table->utf8[index * Utf8States + utf8];
    }
};

/**
 * A grammar made by clone(), handed to the constructor that clone() calls (JS runs one constructor at
 * a time per thread, and each environment has its own thread). Nothing JS can reach sets it.
 */
thread_local std::unique_ptr<GrammarState> adopted;

class NativeGrammar : public Napi::ObjectWrap<NativeGrammar> {
public:
    static constexpr napi_type_tag typeTag{0x5c2e8a417b9d3f06, 0xe4a1c7b3d5f20918};
    static constexpr const char* className = "NativeGrammar";

    static Napi::Function Define(Napi::Env env) {
        return DefineClass(env, className,
                           {
                               taggedGetter<NativeGrammar, &NativeGrammar::VocabularySize>("vocabularySize"),
                               taggedMethod<NativeGrammar, &NativeGrammar::AllowsMethod>("allows"),
                               taggedMethod<NativeGrammar, &NativeGrammar::Mask>("mask"),
                               taggedMethod<NativeGrammar, &NativeGrammar::Accept>("accept"),
                               taggedMethod<NativeGrammar, &NativeGrammar::Clone>("clone"),
                               taggedMethod<NativeGrammar, &NativeGrammar::Dispose>("dispose"),
                           });
    }

    /**
     * new NativeGrammar(model, grammar, root = "root"): the GBNF `grammar` from its rule `root` over the
     * model's vocabulary, in its start state. A grammar llama.cpp cannot parse (or without `root`, or
     * left-recursive) is an Error; an empty one a RangeError (llama.cpp would constrain nothing).
     */
    explicit NativeGrammar(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeGrammar>(info) {
        constructing(info.Env(), [&] {
            if (adopted != nullptr)
                state = std::move(adopted);
            else
                Create(info);
        });
        info.This().As<Napi::Object>().TypeTag(&typeTag);
    }

private:
    std::unique_ptr<GrammarState> state; // null once disposed

    void Create(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        auto created = std::make_unique<GrammarState>();
        created->model = unwrapTagged<NativeModel>(env, info[0], "model")->Handle();
        if (created->model == nullptr) throw Napi::Error::New(env, "the model is disposed");
        const std::string grammar = stringArgument(env, info[1], "grammar");
        const std::string root = info[2].IsUndefined() ? std::string("root") : stringArgument(env, info[2], "root");
        // llama.cpp reads both as C strings: a NUL would cut them short.
        if (grammar.find('\0') != std::string::npos) throwTypeError(env, "grammar must not contain NUL characters");
        if (root.find('\0') != std::string::npos) throwTypeError(env, "root must not contain NUL characters");
        if (grammar.empty()) throwRangeError(env, "grammar must not be empty");
        if (root.empty()) throwRangeError(env, "root must not be empty");
        {
            // Constructed on the JS thread: llama.cpp's errors logged from here on are this grammar's
            // (a decode on a worker thread may log too; its lines are rare and only add detail).
            std::lock_guard<std::mutex> lock(logMutex);
            recentLogs.clear();
        }
        created->sampler = llama_sampler_init_grammar(created->model->vocab, grammar.c_str(), root.c_str());
        if (created->sampler == nullptr) {
            std::string details;
            {
                std::lock_guard<std::mutex> lock(logMutex);
                for (const auto& line : recentLogs)
                    if (line.rfind("error", 0) == 0) details += (details.empty() ? "" : "; ") + line;
            }
            throw Napi::Error::New(env, "llama.cpp could not parse the grammar" + (details.empty() ? "" : " (" + details + ")"));
        }
        created->table = vocabularyTableOf(created->model);
        state = std::move(created);
    }

    GrammarState& Live(Napi::Env env) const {
        if (state == nullptr) throw Napi::Error::New(env, "the grammar is disposed");
        return *state;
    }

    /** A token argument: an integer id in [0, vocabularySize). */
    static llama_token TokenArgument(Napi::Env env, Napi::Value value, const GrammarState& live) {
        return static_cast<llama_token>(integerArgument(env, value, "token", 0, live.model->vocabularySize - 1));
    }

    Napi::Value VocabularySize(const Napi::CallbackInfo& info) {
        return Napi::Number::New(info.Env(), Live(info.Env()).model->vocabularySize);
    }

    /** allows(token) → boolean: whether `token` may come next (an end-of-generation token only where the grammar may end). */
    Napi::Value AllowsMethod(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        GrammarState& live = Live(env);
        return Napi::Boolean::New(env, live.Allows(TokenArgument(env, info[0], live)));
    }

    /**
     * mask(row: Float64Array of vocabularySize logits): writes −Infinity into row[id] for every id that
     * may not come next; other entries are left as they are. Entries already −Infinity are not
     * looked at (a row cut by top-k costs only its survivors).
     */
    Napi::Value Mask(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        GrammarState& live = Live(env);
        const Napi::Value value = info[0];
        if (!value.IsTypedArray()) throwTypeError(env, "row must be a Float64Array");
        napi_typedarray_type type = napi_int8_array;
        size_t length = 0;
        void* data = nullptr;
        if (napi_get_typedarray_info(env, value, &type, &length, &data, nullptr, nullptr) != napi_ok || type != napi_float64_array)
            throwTypeError(env, "row must be a Float64Array");
        const auto vocabularySize = static_cast<size_t>(live.model->vocabularySize);
        if (length != vocabularySize || data == nullptr)
            throwRangeError(env, "row holds " + std::to_string(length) + " entries; the vocabulary has " + std::to_string(vocabularySize));
        double* row = static_cast<double*>(data);
        std::vector<llama_token_data>& candidates = live.candidates;
        candidates.clear();
        candidates.reserve(vocabularySize);
        for (size_t id = 0; id < vocabularySize; id++) {
            if (row[id] == -INFINITY) continue;
            if (live.Admissible(static_cast<llama_token>(id)))
                candidates.push_back({static_cast<llama_token>(id), 0.0f, 0.0f});
            else
                row[id] = -INFINITY;
        }
        if (candidates.empty()) return env.Undefined();
        llama_token_data_array array{candidates.data(), candidates.size(), -1, false};
        llama_sampler_apply(live.sampler, &array);
        for (const llama_token_data& candidate : candidates)
            if (!std::isfinite(candidate.logit)) row[static_cast<size_t>(candidate.id)] = -INFINITY;
        return env.Undefined();
    }

    /**
     * accept(token): advances the grammar past `token`. A token the grammar does not allow here is an
     * Error ("… is not allowed by the grammar here") and leaves the grammar as it was.
     */
    Napi::Value Accept(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        GrammarState& live = Live(env);
        const llama_token token = TokenArgument(env, info[0], live);
        if (!live.Allows(token)) throw Napi::Error::New(env, "token " + std::to_string(token) + " is not allowed by the grammar here");
        try {
            llama_sampler_accept(live.sampler, token);
            live.Advance(token);
        } catch (const std::exception& error) {
            // llama.cpp emptied the grammar's stacks before throwing: the next apply would abort.
            state.reset();
            throw Napi::Error::New(env, std::string("llama.cpp's grammar refused token ") + std::to_string(token) + " (" + error.what() +
                                            "); the grammar is disposed");
        }
        return env.Undefined();
    }

    /** clone() → NativeGrammar: an independent grammar in the same state (for checking a draft without advancing this one). */
    Napi::Value Clone(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        GrammarState& live = Live(env);
        auto copy = std::make_unique<GrammarState>();
        copy->model = live.model;
        copy->table = live.table;
        copy->utf8 = live.utf8;
        copy->sampler = llama_sampler_clone(live.sampler);
        if (copy->sampler == nullptr) throw Napi::Error::New(env, "llama.cpp could not clone the grammar");
        AddonData* data = env.GetInstanceData<AddonData>();
        if (data == nullptr) throw Napi::Error::New(env, "the addon is not initialised in this environment");
        adopted = std::move(copy);
        Napi::Object object;
        try {
            object = data->nativeGrammar.New({});
        } catch (...) {
            adopted.reset();
            throw;
        }
        adopted.reset();
        return object;
    }

    /** Frees the grammar (the model is released with it). Idempotent. */
    Napi::Value Dispose(const Napi::CallbackInfo& info) {
        state.reset();
        return info.Env().Undefined();
    }
};

} // namespace

void registerGrammar(Napi::Env env, Napi::Object exports) {
    Napi::Function grammar = NativeGrammar::Define(env);
    auto* data = new AddonData();
    data->nativeGrammar = Napi::Persistent(grammar);
    env.SetInstanceData<AddonData>(data);
    exports.Set("NativeGrammar", grammar);
    napi_value convert = nullptr;
    NAPI_THROW_IF_FAILED_VOID(
        env, napi_create_function(env, "jsonSchemaToGrammar", NAPI_AUTO_LENGTH, JsonSchemaToGrammarEntry, nullptr, &convert));
    exports.Set("jsonSchemaToGrammar", convert);
}

} // namespace specgate
