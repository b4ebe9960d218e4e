import type {GgufValueType} from "./GgufValueType.js";

/** A scalar metadata value: numbers for 8-32-bit ints and floats, number or bigint for 64-bit ints. */
export type GgufScalar = number | bigint | boolean | string;

/** A GGUF array: every item has `itemType` (nested arrays are GgufArray items). */
export interface GgufArray {
    readonly itemType: GgufValueType;
    readonly items: readonly GgufMetadataValue[];
}

export type GgufMetadataValue = GgufScalar | GgufArray;

/** One typed metadata value as stored in (or read from) a GGUF file. */
export interface GgufMetadataEntry {
    readonly type: GgufValueType;
    readonly value: GgufMetadataValue;
}
