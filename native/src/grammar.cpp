// NativeGrammar (llama.cpp's grammar over a model's vocabulary) and jsonSchemaToGrammar (llama.cpp's
// common/json-schema-to-grammar.cpp, compiled into the addon from LLAMA_CPP_DIR).
//
// Threads. Work whose cost a request controls leaves the JS thread: converting a schema
// (compileJsonSchema) and building a grammar's first stacks (compileGrammar) run as GrammarJobs on
// threads of their own, which a caller may abandon; masking a row over the vocabulary (mask, 10–35 ms
// at 152k tokens) runs on libuv's worker pool, and so does a generation step's other grammar work:
// checking a draft (acceptTokens with rewind), masking a step's rows while following its draft
// (maskRows) and advancing past the emitted tokens (acceptTokens). A grammar built within budget can
// still make one such check take minutes (its stacks multiply on a token), so none of them runs on the
// JS thread in a generation; allows() and accept() remain there for tests and tools. A grammar is used
// by one generation at a time: while a worker runs, every other call on it is refused ("busy").
//
// Speculation without copies. A grammar is llama.cpp's llama_grammar (its internal API, exported by
// libllama): immutable rules and the current stacks. mark() saves the stacks (pointers into the rules)
// and rewind() restores them, so a draft is checked on the live grammar and undone, instead of
// deep-copying the rules every step as llama_sampler_clone does.
//
// Every argument is checked before it reaches llama.cpp, whose grammar code aborts the process on a
// state it does not expect: accepting a token the grammar does not allow (an end-of-generation token
// where the grammar cannot end aborts; any other throws after emptying the grammar's stacks, and the
// next apply would abort). So accept() checks the token against the grammar first, and a grammar whose
// accept failed anyway is dropped.
//
// Beyond llama.cpp's grammar, a NativeGrammar refuses control tokens (detokenized as nothing) and
// holds the accepted bytes to strict UTF-8 (VocabularyTable), so the text specgate detokenizes is the
// text the grammar matched.
#include "NativeGrammar.h"

#include <llama.h>

#include "GrammarJob.h"
#include "NativeModel.h"
#include "runtime.h"
#include "validate.h"

#include "json-schema-to-grammar.h"
#include "llama-grammar.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
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
 * GBNF whose root rule is "root" for the JSON schema `text`: llama.cpp's json_schema_to_grammar, as
 * llama-server converts `json_schema` and `response_format`. Invalid JSON is a std::invalid_argument
 * ("schema is not valid JSON: …"); a schema deeper or with more references than the converter can
 * recurse through a std::range_error; a schema the converter refuses (an unknown type, an unresolvable
 * $ref, a malformed keyword) its own exception. Safe on any thread.
 */
std::string convertSchema(const std::string& text) {
    if (nestingDepth(text) > maxSchemaDepth)
        throw std::range_error("schema is nested deeper than " + std::to_string(maxSchemaDepth) + " levels");
    if (occurrences(text, "\"$ref\"") > maxSchemaReferences)
        throw std::range_error("schema has more than " + std::to_string(maxSchemaReferences) + " $ref keys");
    common_json schema;
    try {
        schema = common_json::parse(text);
    } catch (const std::exception& error) {
        throw std::invalid_argument(std::string("schema is not valid JSON: ") + error.what());
    }
    return json_schema_to_grammar(schema, /* force_gbnf= */ true);
}

/**
 * jsonSchemaToGrammar(schemaJson: string) → GBNF, on the calling thread (convertSchema; a RangeError
 * for a schema too deep or with too many references, an Error otherwise). Keywords the converter does
 * not know it ignores, and a `pattern` it cannot translate becomes "any string" with a warning on
 * stderr: src/constraints/jsonSchemaGrammar.ts refuses both before calling this.
 */
Napi::Value JsonSchemaToGrammar(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const std::string text = stringArgument(env, info[0], "schema");
    try {
        return Napi::String::New(env, convertSchema(text));
    } catch (const std::range_error& error) {
        throwRangeError(env, error.what());
    } catch (const std::exception& error) {
        throw Napi::Error::New(env, error.what());
    }
}

napi_value JsonSchemaToGrammarEntry(napi_env env, napi_callback_info callbackInfo) {
    return guarded(env, [&]() -> napi_value { return JsonSchemaToGrammar(Napi::CallbackInfo(env, callbackInfo)); });
}

/**
 * compileJsonSchema(schemaJson: string, maxJobs: number, maxGrammarBytes: number) → Promise<string>:
 * convertSchema as a GrammarJob (refused when maxJobs run already). A grammar longer than
 * maxGrammarBytes is an Error whose code is "grammar_too_large": the converter's output is what the
 * grammar's construction and every later step pay for.
 */
Napi::Value CompileJsonSchema(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    std::string text = stringArgument(env, info[0], "schema");
    const auto maxJobs = static_cast<int>(integerArgument(env, info[1], "maxJobs", 1, 1024));
    const auto maxBytes = static_cast<size_t>(integerArgument(env, info[2], "maxGrammarBytes", 1, int64_t{1} << 40));
    auto grammar = std::make_shared<std::string>();
    GrammarJobBody body;
    body.run = [text = std::move(text), grammar, maxBytes](std::string& code) -> std::string {
        *grammar = convertSchema(text);
        if (grammar->size() > maxBytes) {
            const std::string size = std::to_string(grammar->size());
            grammar->clear();
            code = "grammar_too_large";
            return "the schema's grammar has " + size + " bytes; the limit is " + std::to_string(maxBytes);
        }
        return {};
    };
    body.settle = [grammar](Napi::Env env) -> Napi::Value { return Napi::String::New(env, *grammar); };
    return startGrammarJob(env, maxJobs, std::move(body));
}

napi_value CompileJsonSchemaEntry(napi_env env, napi_callback_info callbackInfo) {
    return guarded(env, [&]() -> napi_value { return CompileJsonSchema(Napi::CallbackInfo(env, callbackInfo)); });
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

/** A grammar, the model whose vocabulary it reads (kept alive by it), and what mark() saved. */
struct GrammarState {
    std::shared_ptr<ModelHandle> model;
    std::shared_ptr<const VocabularyTable> table;
    llama_grammar* grammar = nullptr;
    /** The strict UTF-8 decoder's state after the tokens accepted so far. */
    uint8_t utf8 = Ground;
    /** A mask runs on a worker thread: nothing else may touch the grammar until it ends (JS thread only). */
    bool busy = false;
    /** llama.cpp refused a token a worker accepted, emptying the stacks: every later call is refused (JS thread only). */
    bool broken = false;
    /** mark()'s state, restored by rewind(). */
    bool marked = false;
    llama_grammar_stacks savedStacks;
    llama_partial_utf8 savedPartialUtf8{};
    uint8_t savedUtf8 = Ground;

    GrammarState() = default;
    GrammarState(const GrammarState&) = delete;
    GrammarState& operator=(const GrammarState&) = delete;
    // The grammar reads the model's vocabulary: freed first (members are destroyed after the body).
    ~GrammarState() {
        if (grammar != nullptr) llama_grammar_free_impl(grammar);
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
    bool Allows(llama_token token) const {
        if (!Admissible(token)) return false;
        llama_token_data candidate{token, 0.0f, 0.0f};
        llama_token_data_array array{&candidate, 1, -1, false};
        llama_grammar_apply_impl(*grammar, &array);
        return std::isfinite(candidate.logit);
    }

    /** Follows an accepted token's bytes. */
    void Advance(llama_token token) {
        const auto index = static_cast<size_t>(token);
        if (table->kinds[index] == Text) utf8 = table->utf8[index * Utf8States + utf8];
    }

    /** The grammar's parse state (stacks, partial UTF-8 of both decoders): what a step undoes. */
    struct Snapshot {
        llama_grammar_stacks stacks;
        llama_partial_utf8 partialUtf8{};
        uint8_t utf8 = Ground;
    };

    Snapshot Save() const { return {grammar->stacks, grammar->partial_utf8, utf8}; }

    void Restore(Snapshot snapshot) {
        grammar->stacks = std::move(snapshot.stacks);
        grammar->partial_utf8 = snapshot.partialUtf8;
        utf8 = snapshot.utf8;
    }

    /** Advances past `token`, which Allows (llama.cpp throws, its stacks emptied, on one it refuses). */
    void AcceptAllowed(llama_token token) {
        llama_grammar_accept_impl(*grammar, token);
        Advance(token);
    }

    /**
     * Accepts `tokens` in order while each is allowed and returns how many were; with `restore`, the
     * state is put back afterwards (a draft checked, nothing kept). Any thread, while no other call
     * uses the grammar. Tokens must be in range.
     */
    size_t AcceptWhileAllowed(const std::vector<int32_t>& tokens, bool restore) {
        Snapshot saved;
        if (restore) saved = Save();
        size_t accepted = 0;
        try {
            while (accepted < tokens.size() && Allows(tokens[accepted])) AcceptAllowed(tokens[accepted++]);
        } catch (...) {
            if (restore) Restore(std::move(saved));
            throw;
        }
        if (restore) Restore(std::move(saved));
        return accepted;
    }

    /**
     * One verification step's masks: row i is masked in the state after tokens[0..i) (the draft), and
     * the walk stops after the first row whose token is missing or not allowed (later rows are never
     * reached). With `greedy`, a row whose argmax (the lowest index among equals) the grammar allows is
     * left whole: its argmax is the masked row's. The state is put back afterwards. Returns the rows
     * masked. Any thread, while no other call uses the grammar.
     */
    size_t MaskRows(std::vector<std::vector<double>>& rows, const std::vector<int32_t>& tokens, bool greedy) {
        Snapshot saved = Save();
        size_t masked = 0;
        try {
            for (size_t index = 0; index < rows.size(); index++) {
                std::vector<double>& row = rows[index];
                if (!greedy || !Allows(argmaxOf(row))) {
                    Mask(row.data(), row.size());
                    masked++;
                }
                if (index >= tokens.size() || !Allows(tokens[index])) break;
                AcceptAllowed(tokens[index]);
            }
        } catch (...) {
            Restore(std::move(saved));
            throw;
        }
        Restore(std::move(saved));
        return masked;
    }

    /** The index of a row's largest entry, the lowest among equals (src/distributions/argmax.ts). */
    static llama_token argmaxOf(const std::vector<double>& row) {
        size_t best = 0;
        for (size_t index = 1; index < row.size(); index++)
            if (row[index] > row[best]) best = index;
        return static_cast<llama_token>(best);
    }

    /**
     * Sets row[id] to −Infinity for every id that may not come next (ids already −Infinity are not
     * looked at). Any thread, while no other call uses the grammar.
     */
    void Mask(double* row, size_t size) const {
        std::vector<llama_token_data> candidates;
        candidates.reserve(size);
        for (size_t id = 0; id < size; id++) {
            if (row[id] == -INFINITY) continue;
            if (Admissible(static_cast<llama_token>(id)))
                candidates.push_back({static_cast<llama_token>(id), 0.0f, 0.0f});
            else
                row[id] = -INFINITY;
        }
        if (candidates.empty()) return;
        llama_token_data_array array{candidates.data(), candidates.size(), -1, false};
        llama_grammar_apply_impl(*grammar, &array);
        for (const llama_token_data& candidate : candidates)
            if (!std::isfinite(candidate.logit)) row[static_cast<size_t>(candidate.id)] = -INFINITY;
    }
};

/**
 * A grammar over `model`'s vocabulary from GBNF `text`, rule `root` (any thread): llama.cpp parses it
 * and builds its first stacks, which for nested optional repetitions can take long. An error message
 * (empty on success) names what llama.cpp logged.
 */
std::string createState(const std::shared_ptr<ModelHandle>& model, const std::string& text, const std::string& root,
                        std::shared_ptr<GrammarState>& created) {
    auto state = std::make_shared<GrammarState>();
    state->model = model;
    const uint64_t mark = logMark();
    state->grammar = llama_grammar_init_impl(model->vocab, text.c_str(), root.c_str(), false, nullptr, 0, nullptr, 0);
    if (state->grammar == nullptr) {
        const std::string details = recentErrors(mark);
        return "llama.cpp could not parse the grammar" + (details.empty() ? "" : " (" + details + ")");
    }
    state->table = vocabularyTableOf(model);
    created = std::move(state);
    return {};
}

/** The grammar text and root of a constructor or compileGrammar call, checked (TypeError, RangeError). */
std::pair<std::string, std::string> grammarArguments(Napi::Env env, const Napi::Value& grammarValue, const Napi::Value& rootValue) {
    std::string grammar = stringArgument(env, grammarValue, "grammar");
    std::string root = rootValue.IsUndefined() ? std::string("root") : stringArgument(env, rootValue, "root");
    // llama.cpp reads both as C strings: a NUL would cut them short.
    if (grammar.find('\0') != std::string::npos) throwTypeError(env, "grammar must not contain NUL characters");
    if (root.find('\0') != std::string::npos) throwTypeError(env, "root must not contain NUL characters");
    if (grammar.empty()) throwRangeError(env, "grammar must not be empty");
    if (root.empty()) throwRangeError(env, "root must not be empty");
    return {std::move(grammar), std::move(root)};
}

/**
 * A grammar made by clone() or compileGrammar, handed to the constructor they call (JS runs one
 * constructor at a time per thread, and each environment has its own thread). Nothing JS can reach sets it.
 */
thread_local std::shared_ptr<GrammarState> adopted;

/** A new NativeGrammar object around `state` (JS thread). */
Napi::Object wrapState(Napi::Env env, std::shared_ptr<GrammarState> state) {
    AddonData* data = env.GetInstanceData<AddonData>();
    if (data == nullptr) throw Napi::Error::New(env, "the addon is not initialised in this environment");
    adopted = std::move(state);
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

/**
 * Masks and steps whose work is running on libuv's worker pool, abandoned ones included: at exit such a
 * thread is still inside llama.cpp (and libuv would wait for it), so exitWhileGrammarJobsRun counts them.
 */
std::atomic<int> runningGrammarSteps{0};

/** Counts a worker's Execute in runningGrammarSteps while it lasts. */
struct RunningStep {
    RunningStep() { runningGrammarSteps.fetch_add(1); }
    ~RunningStep() { runningGrammarSteps.fetch_sub(1); }
    RunningStep(const RunningStep&) = delete;
    RunningStep& operator=(const RunningStep&) = delete;
};

/**
 * Writes the −Infinity entries of a masked copy back into its row, on the JS thread; false (nothing
 * written) when JS resized or detached the row while the worker masked the copy.
 */
bool writeMaskBack(Napi::Env env, Napi::Value row, const std::vector<double>& copy) {
    napi_typedarray_type type = napi_int8_array;
    size_t length = 0;
    void* data = nullptr;
    if (napi_get_typedarray_info(env, row, &type, &length, &data, nullptr, nullptr) != napi_ok || length != copy.size() || data == nullptr)
        return false;
    double* target = static_cast<double*>(data);
    for (size_t id = 0; id < copy.size(); id++)
        if (copy[id] == -INFINITY) target[id] = -INFINITY;
    return true;
}

/**
 * Masks a copy of a row on libuv's worker pool and writes the −Infinity entries back into the row on
 * the JS thread (the row is never written from the worker: JS may resize or detach it meanwhile, which
 * is then an error). Resolves with the milliseconds the mask took on the worker.
 */
class MaskWorker : public Napi::AsyncWorker {
public:
    MaskWorker(Napi::Env env, std::shared_ptr<GrammarState> state, Napi::Object row, std::vector<double> copy)
        : Napi::AsyncWorker(env, "specgate.grammarMask"), deferred(Napi::Promise::Deferred::New(env)), state(std::move(state)),
          row(Napi::Persistent(row)), copy(std::move(copy)) {
        this->state->busy = true;
    }

    Napi::Promise Promise() { return deferred.Promise(); }

protected:
    void Execute() override {
        const RunningStep running;
        const auto start = std::chrono::steady_clock::now();
        try {
            state->Mask(copy.data(), copy.size());
        } catch (const std::exception& exception) {
            SetError(exception.what());
        } catch (...) {
            SetError("the grammar's mask failed with an unknown exception");
        }
        milliseconds = millisecondsSince(start);
    }

    void OnOK() override {
        state->busy = false;
        Napi::Env env = Env();
        if (!writeMaskBack(env, row.Value(), copy)) {
            deferred.Reject(Napi::RangeError::New(env, "the row was resized or detached while the grammar masked it").Value());
            return;
        }
        deferred.Resolve(Napi::Number::New(env, milliseconds));
    }

    void OnError(const Napi::Error& error) override {
        state->busy = false;
        deferred.Reject(error.Value());
    }

private:
    Napi::Promise::Deferred deferred;
    std::shared_ptr<GrammarState> state;
    Napi::ObjectReference row;
    std::vector<double> copy;
    double milliseconds = 0;
};

/**
 * A generation step's grammar work on libuv's worker pool: acceptTokens (rows empty) or maskRows (each
 * row a copy, written back on the JS thread as MaskWorker writes one). Resolves with {count,
 * milliseconds}: the tokens accepted or the rows masked, and the worker's time. A token llama.cpp
 * refused after Allows passed it leaves a grammar that was not restored broken.
 */
class StepWorker : public Napi::AsyncWorker {
public:
    /** What a step does on the worker. */
    enum class Kind { Accept, AcceptAndRestore, MaskRows };

    StepWorker(Napi::Env env, std::shared_ptr<GrammarState> state, Kind kind, std::vector<int32_t> tokens, bool greedy)
        : Napi::AsyncWorker(env, "specgate.grammarStep"), deferred(Napi::Promise::Deferred::New(env)), state(std::move(state)), kind(kind),
          tokens(std::move(tokens)), greedy(greedy) {
        this->state->busy = true;
    }

    /** A row to mask (MaskRows): its JS array, kept referenced, and a copy the worker reads and writes. */
    void AddRow(Napi::Object row, std::vector<double> copy) {
        targets.push_back(Napi::Persistent(row));
        copies.push_back(std::move(copy));
    }

    Napi::Promise Promise() { return deferred.Promise(); }

protected:
    void Execute() override {
        const RunningStep running;
        const auto start = std::chrono::steady_clock::now();
        try {
            count = kind == Kind::MaskRows ? state->MaskRows(copies, tokens, greedy)
                                           : state->AcceptWhileAllowed(tokens, kind == Kind::AcceptAndRestore);
        } catch (const std::exception& exception) {
            SetError(std::string("llama.cpp's grammar failed (") + exception.what() + ")");
        } catch (...) {
            SetError("the grammar's step failed with an unknown exception");
        }
        milliseconds = millisecondsSince(start);
    }

    void OnOK() override {
        state->busy = false;
        Napi::Env env = Env();
        for (size_t index = 0; index < targets.size(); index++)
            if (!writeMaskBack(env, targets[index].Value(), copies[index])) {
                deferred.Reject(Napi::RangeError::New(env, "a row was resized or detached while the grammar masked it").Value());
                return;
            }
        Napi::Object result = Napi::Object::New(env);
        result.Set("count", Napi::Number::New(env, static_cast<double>(count)));
        result.Set("milliseconds", Napi::Number::New(env, milliseconds));
        deferred.Resolve(result);
    }

    void OnError(const Napi::Error& error) override {
        state->busy = false;
        if (kind == Kind::Accept) state->broken = true;
        deferred.Reject(error.Value());
    }

private:
    Napi::Promise::Deferred deferred;
    std::shared_ptr<GrammarState> state;
    Kind kind;
    std::vector<int32_t> tokens;
    bool greedy;
    std::vector<Napi::ObjectReference> targets;
    std::vector<std::vector<double>> copies;
    size_t count = 0;
    double milliseconds = 0;
};

class NativeGrammar : public Napi::ObjectWrap<NativeGrammar> {
public:
    static constexpr napi_type_tag typeTag{0x5c2e8a417b9d3f06, 0xe4a1c7b3d5f20918};
    static constexpr const char* className = "NativeGrammar";

    static Napi::Function Define(Napi::Env env) {
        return DefineClass(env, className,
                           {
                               taggedGetter<NativeGrammar, &NativeGrammar::VocabularySize>("vocabularySize"),
                               taggedMethod<NativeGrammar, &NativeGrammar::AllowsMethod>("allows"),
                               taggedMethod<NativeGrammar, &NativeGrammar::MaskMethod>("mask"),
                               taggedMethod<NativeGrammar, &NativeGrammar::AcceptTokens>("acceptTokens"),
                               taggedMethod<NativeGrammar, &NativeGrammar::MaskRowsMethod>("maskRows"),
                               taggedMethod<NativeGrammar, &NativeGrammar::Accept>("accept"),
                               taggedMethod<NativeGrammar, &NativeGrammar::Mark>("mark"),
                               taggedMethod<NativeGrammar, &NativeGrammar::Rewind>("rewind"),
                               taggedMethod<NativeGrammar, &NativeGrammar::Clone>("clone"),
                               taggedMethod<NativeGrammar, &NativeGrammar::Dispose>("dispose"),
                           });
    }

    /**
     * new NativeGrammar(model, grammar, root = "root"): the GBNF `grammar` from its rule `root` over the
     * model's vocabulary, in its start state, built on the calling thread (compileGrammar builds it on a
     * thread of its own). A grammar llama.cpp cannot parse (or without `root`, or left-recursive) is an
     * Error; an empty one a RangeError (llama.cpp would constrain nothing).
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
    std::shared_ptr<GrammarState> state; // null once disposed

    void Create(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        std::shared_ptr<ModelHandle> model = unwrapTagged<NativeModel>(env, info[0], "model")->Handle();
        if (model == nullptr) throw Napi::Error::New(env, "the model is disposed");
        const auto [grammar, root] = grammarArguments(env, info[1], info[2]);
        std::shared_ptr<GrammarState> created;
        const std::string error = createState(model, grammar, root, created);
        if (!error.empty()) throw Napi::Error::New(env, error);
        state = std::move(created);
    }

    /** The grammar, unless disposed, broken or busy with a worker (an Error). */
    GrammarState& Live(Napi::Env env) const {
        if (state == nullptr) throw Napi::Error::New(env, "the grammar is disposed");
        if (state->busy) throw Napi::Error::New(env, "the grammar is busy: a mask or step is running (await it first)");
        if (state->broken) throw Napi::Error::New(env, "the grammar is unusable: llama.cpp refused a token it had allowed");
        return *state;
    }

    /** A tokens argument: an Int32Array of ids in [0, vocabularySize). */
    static std::vector<int32_t> TokensArgument(Napi::Env env, Napi::Value value, const GrammarState& live) {
        std::vector<int32_t> tokens = int32ArrayArgument(env, value, "tokens");
        for (const int32_t token : tokens)
            if (token < 0 || token >= live.model->vocabularySize)
                throwRangeError(env, "tokens must hold ids in [0, " + std::to_string(live.model->vocabularySize) + "), got " +
                                         std::to_string(token));
        return tokens;
    }

    /** A row argument: a copy of a Float64Array of vocabularySize entries. */
    static std::vector<double> RowArgument(Napi::Env env, Napi::Value value, const GrammarState& live) {
        napi_typedarray_type type = napi_int8_array;
        size_t length = 0;
        void* data = nullptr;
        if (!value.IsTypedArray() || napi_get_typedarray_info(env, value, &type, &length, &data, nullptr, nullptr) != napi_ok ||
            type != napi_float64_array)
            throwTypeError(env, "row must be a Float64Array");
        const auto vocabularySize = static_cast<size_t>(live.model->vocabularySize);
        if (length != vocabularySize || data == nullptr)
            throwRangeError(env, "row holds " + std::to_string(length) + " entries; the vocabulary has " + std::to_string(vocabularySize));
        const double* row = static_cast<const double*>(data);
        return std::vector<double>(row, row + length);
    }

    /** A token argument: an integer id in [0, vocabularySize). */
    static llama_token TokenArgument(Napi::Env env, Napi::Value value, const GrammarState& live) {
        return static_cast<llama_token>(integerArgument(env, value, "token", 0, live.model->vocabularySize - 1));
    }

    Napi::Value VocabularySize(const Napi::CallbackInfo& info) {
        if (state == nullptr) throw Napi::Error::New(info.Env(), "the grammar is disposed");
        return Napi::Number::New(info.Env(), state->model->vocabularySize);
    }

    /** allows(token) → boolean: whether `token` may come next (an end-of-generation token only where the grammar may end). */
    Napi::Value AllowsMethod(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        GrammarState& live = Live(env);
        return Napi::Boolean::New(env, live.Allows(TokenArgument(env, info[0], live)));
    }

    /**
     * mask(row: Float64Array of vocabularySize logits) → Promise<number>: writes −Infinity into row[id]
     * for every id that may not come next; other entries are left as they are. Entries already −Infinity
     * are not looked at (a row cut by top-k costs only its survivors). The work runs on a worker thread
     * over a copy of the row; the promise resolves, with the worker's milliseconds, once the row is
     * written. Until then the grammar refuses every other call.
     */
    Napi::Value MaskMethod(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        GrammarState& live = Live(env);
        const Napi::Value value = info[0];
        std::vector<double> copy = RowArgument(env, value, live);
        auto* worker = new MaskWorker(env, state, value.As<Napi::Object>(), std::move(copy));
        Napi::Promise promise = worker->Promise();
        worker->Queue();
        return promise;
    }

    /**
     * acceptTokens(tokens: Int32Array, restore: boolean) → Promise<{count, milliseconds}>: on libuv's
     * worker pool, accepts the tokens in order while each is allowed; `count` is how many were. With
     * `restore` the state is put back afterwards (a draft checked). Until it settles the grammar
     * refuses every other call.
     */
    Napi::Value AcceptTokens(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        GrammarState& live = Live(env);
        std::vector<int32_t> tokens = TokensArgument(env, info[0], live);
        if (!info[1].IsBoolean()) throwTypeError(env, "restore must be a boolean");
        const auto kind = info[1].As<Napi::Boolean>().Value() ? StepWorker::Kind::AcceptAndRestore : StepWorker::Kind::Accept;
        auto* worker = new StepWorker(env, state, kind, std::move(tokens), false);
        Napi::Promise promise = worker->Promise();
        worker->Queue();
        return promise;
    }

    /**
     * maskRows(rows: Float64Array[], tokens: Int32Array, greedy: boolean) → Promise<{count,
     * milliseconds}>: a verification step's masks on libuv's worker pool (GrammarState::MaskRows): row
     * i in the state after tokens[0..i), stopping after the first row whose token is missing or not
     * allowed; with `greedy`, a row whose argmax is allowed stays whole. The state is unchanged
     * afterwards; `count` is the rows masked. Rows are copied and written back once it ends.
     */
    Napi::Value MaskRowsMethod(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        GrammarState& live = Live(env);
        if (!info[0].IsArray()) throwTypeError(env, "rows must be an array of Float64Array");
        Napi::Array rows = info[0].As<Napi::Array>();
        std::vector<int32_t> tokens = TokensArgument(env, info[1], live);
        if (!info[2].IsBoolean()) throwTypeError(env, "greedy must be a boolean");
        std::vector<std::pair<Napi::Object, std::vector<double>>> copies;
        for (uint32_t index = 0; index < rows.Length(); index++) {
            Napi::Value row = rows.Get(index);
            copies.emplace_back(row.IsObject() ? row.As<Napi::Object>() : Napi::Object(), RowArgument(env, row, live));
        }
        auto* worker = new StepWorker(env, state, StepWorker::Kind::MaskRows, std::move(tokens), info[2].As<Napi::Boolean>().Value());
        for (auto& [row, copy] : copies) worker->AddRow(row, std::move(copy));
        Napi::Promise promise = worker->Promise();
        worker->Queue();
        return promise;
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
            llama_grammar_accept_impl(*live.grammar, token);
            live.Advance(token);
        } catch (const std::exception& error) {
            // llama.cpp emptied the grammar's stacks before throwing: the next apply would abort.
            state.reset();
            throw Napi::Error::New(env, std::string("llama.cpp's grammar refused token ") + std::to_string(token) + " (" + error.what() +
                                            "); the grammar is disposed");
        }
        return env.Undefined();
    }

    /** mark(): remembers the current state (one mark; a later mark replaces it). Costs a copy of the current stacks, not of the rules. */
    Napi::Value Mark(const Napi::CallbackInfo& info) {
        GrammarState& live = Live(info.Env());
        live.savedStacks = live.grammar->stacks;
        live.savedPartialUtf8 = live.grammar->partial_utf8;
        live.savedUtf8 = live.utf8;
        live.marked = true;
        return info.Env().Undefined();
    }

    /** rewind(): returns to the state mark() remembered (which stays marked); an Error without a mark. */
    Napi::Value Rewind(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        GrammarState& live = Live(env);
        if (!live.marked) throw Napi::Error::New(env, "the grammar has no mark to rewind to");
        live.grammar->stacks = live.savedStacks;
        live.grammar->partial_utf8 = live.savedPartialUtf8;
        live.utf8 = live.savedUtf8;
        return env.Undefined();
    }

    /** clone() → NativeGrammar: an independent grammar in the same state (a deep copy, rules included; unmarked). */
    Napi::Value Clone(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        GrammarState& live = Live(env);
        auto copy = std::make_shared<GrammarState>();
        copy->model = live.model;
        copy->table = live.table;
        copy->utf8 = live.utf8;
        copy->grammar = llama_grammar_clone_impl(*live.grammar);
        if (copy->grammar == nullptr) throw Napi::Error::New(env, "llama.cpp could not clone the grammar");
        return wrapState(env, std::move(copy));
    }

    /** Frees the grammar (the model is released with it; a mask still running keeps it until it ends). Idempotent. */
    Napi::Value Dispose(const Napi::CallbackInfo& info) {
        state.reset();
        return info.Env().Undefined();
    }
};

/**
 * compileGrammar(model, grammar, root, maxJobs) → Promise<NativeGrammar>: the constructor's work as a
 * GrammarJob (refused when maxJobs run already). Arguments are checked at once (TypeError, RangeError);
 * llama.cpp's refusal rejects the promise with its message.
 */
Napi::Value CompileGrammar(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    std::shared_ptr<ModelHandle> model = unwrapTagged<NativeModel>(env, info[0], "model")->Handle();
    if (model == nullptr) throw Napi::Error::New(env, "the model is disposed");
    auto [grammar, root] = grammarArguments(env, info[1], info[2]);
    const auto maxJobs = static_cast<int>(integerArgument(env, info[3], "maxJobs", 1, 1024));
    auto created = std::make_shared<std::shared_ptr<GrammarState>>();
    GrammarJobBody body;
    body.run = [model, grammar = std::move(grammar), root = std::move(root), created](std::string& /*code*/) -> std::string {
        return createState(model, grammar, root, *created);
    };
    body.settle = [created](Napi::Env env) -> Napi::Value { return wrapState(env, std::move(*created)); };
    return startGrammarJob(env, maxJobs, std::move(body));
}

napi_value CompileGrammarEntry(napi_env env, napi_callback_info callbackInfo) {
    return guarded(env, [&]() -> napi_value { return CompileGrammar(Napi::CallbackInfo(env, callbackInfo)); });
}

/** grammarJobsRunning() → the grammar job threads not yet ended, abandoned ones included (this addon, process-wide). */
napi_value GrammarJobsRunningEntry(napi_env env, napi_callback_info /*callbackInfo*/) {
    return guarded(env, [&]() -> napi_value { return Napi::Number::New(env, liveGrammarThreads.load()); });
}

/**
 * exitWhileGrammarJobsRun(code) → false when no grammar job, mask or step runs. Otherwise it ends the
 * process at once with `code`, C stdio flushed, without atexit handlers or static destructors: a job's
 * thread (or a pool thread's step, which libuv would wait for at exit) still runs inside llama.cpp and
 * the C++ runtime, whose static objects those would destroy under it.
 * For process "exit" (src/backend/nativeAddon.ts), after which nothing else would run anyway.
 */
napi_value ExitWhileGrammarJobsRunEntry(napi_env env, napi_callback_info callbackInfo) {
    return guarded(env, [&]() -> napi_value {
        const Napi::CallbackInfo info(env, callbackInfo);
        const auto code = static_cast<int>(integerArgument(env, info[0], "code", INT32_MIN, INT32_MAX));
        if (liveGrammarThreads.load() == 0 && runningGrammarSteps.load() == 0) return Napi::Boolean::New(env, false);
        std::fflush(nullptr);
        std::_Exit(code);
    });
}

void exportFunction(Napi::Env env, Napi::Object exports, const char* name, napi_callback callback) {
    napi_value function = nullptr;
    NAPI_THROW_IF_FAILED_VOID(env, napi_create_function(env, name, NAPI_AUTO_LENGTH, callback, nullptr, &function));
    exports.Set(name, function);
}

} // namespace

void registerGrammar(Napi::Env env, Napi::Object exports) {
    Napi::Function grammar = NativeGrammar::Define(env);
    auto* data = new AddonData();
    data->nativeGrammar = Napi::Persistent(grammar);
    env.SetInstanceData<AddonData>(data);
    exports.Set("NativeGrammar", grammar);
    exportFunction(env, exports, "jsonSchemaToGrammar", JsonSchemaToGrammarEntry);
    exportFunction(env, exports, "compileJsonSchema", CompileJsonSchemaEntry);
    exportFunction(env, exports, "compileGrammar", CompileGrammarEntry);
    exportFunction(env, exports, "grammarJobsRunning", GrammarJobsRunningEntry);
    exportFunction(env, exports, "exitWhileGrammarJobsRun", ExitWhileGrammarJobsRunEntry);
}

} // namespace specgate
