import {dirname, join} from "node:path";
import {fileURLToPath} from "node:url";

/** A six-item JSONL battery in two languages, written for skewedBigramPair: "en" well served, "ja" not. */
export const twoLanguageBattery = join(dirname(fileURLToPath(import.meta.url)), "twoLanguageBattery.jsonl");
