/**
 * JSON schemas that froze `specgate serve` before structured outputs left the event loop (issue 40):
 * nested bounded repetition in a `pattern`, and objects, enums and alternatives by the ten thousand.
 * Shared by the tests that must see each refused without a stall and the stall benchmark.
 */
export const hostileSchemas: Readonly<Record<string, unknown>> = {
    "nested bounded repetition in a pattern": {type: "string", pattern: "^((a{0,50}){0,50}){0,50}$"},
    "10,000 optional properties": {
        type: "object",
        properties: Object.fromEntries(Array.from({length: 10_000}, (_, i) => [`p${i}`, {type: "integer"}]))
    },
    "an enum of 10,000 values": {enum: Array.from({length: 10_000}, (_, i) => `value-${i}`)},
    "anyOf of 10,000 objects": {
        anyOf: Array.from({length: 10_000}, (_, i) => ({type: "object", properties: {[`k${i}`]: {type: "string"}}, required: [`k${i}`]}))
    }
};
