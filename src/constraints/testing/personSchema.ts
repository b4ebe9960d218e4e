/**
 * A JSON schema for tests: an integer in a range, an enum, a bounded string and a nested object with
 * a required and an optional property. Every output it admits is short, so random walks over its
 * grammar end within a few hundred bytes.
 */
export const personSchema = {
    type: "object",
    properties: {
        age: {type: "integer", minimum: 0, maximum: 150},
        role: {enum: ["admin", "user"]},
        nick: {type: "string", maxLength: 6},
        address: {
            type: "object",
            properties: {zip: {type: "string", pattern: "^[0-9]{5}$"}, verified: {type: "boolean"}},
            required: ["zip"]
        }
    },
    required: ["age", "role", "address"]
} as const;
