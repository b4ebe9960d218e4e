import type {ModelBackend} from "../backend/ModelBackend.js";

const known = new WeakMap<ModelBackend, boolean>();

/**
 * Whether the backend's detokenizer removes spaces depending on what follows them (llama.cpp's
 * clean_spaces, on for some vocabularies: " ," → ",", " 's" → "'s", " ' " → "'"). Found once per
 * backend by decoding what it tokenizes: a detokenizer that gives back every probe as written never
 * takes a space back, so streamed text need not wait for what follows a space.
 */
export function detokenizerCleansSpaces(backend: ModelBackend): boolean {
    let cleans = known.get(backend);
    if (cleans === undefined) {
        cleans = probes.some((probe) => backend.detokenize(backend.tokenize(probe)) !== probe);
        known.set(backend, cleans);
    }
    return cleans;
}

/** Each follows a word, so no detokenizer's rule for a leading space applies. */
const probes = ["a ,", "a .", "a ?", "a !", "a 's", "a 'm", "a ' b", "a n't"];
