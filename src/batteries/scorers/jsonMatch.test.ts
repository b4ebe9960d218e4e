import {describe, expect, it} from "vitest";
import {jsonMatch} from "./jsonMatch.js";

const reference = '{"name":"convert_currency","arguments":{"amount":25,"from":"GBP","to":"USD"}}';

describe("jsonMatch", () => {
    it("accepts the same call in any spacing or key order", () => {
        expect(jsonMatch(reference, reference)).toBe(true);
        expect(jsonMatch(' {"name": "convert_currency", "arguments": {"amount": 25, "from": "GBP", "to": "USD"}}\nmore', reference)).toBe(
            true
        );
        expect(jsonMatch('{"arguments":{"to":"USD","from":"GBP","amount":25},"name":"convert_currency"}', reference)).toBe(true);
    });

    it("rejects a different value, a missing or extra argument, a type change and text that does not parse", () => {
        expect(jsonMatch('{"name":"convert_currency","arguments":{"amount":25,"from":"USD","to":"GBP"}}', reference)).toBe(false);
        expect(jsonMatch('{"name":"convert_currency","arguments":{"amount":25,"from":"GBP"}}', reference)).toBe(false);
        expect(jsonMatch('{"name":"convert_currency","arguments":{"amount":25,"from":"GBP","to":"USD","x":1}}', reference)).toBe(false);
        expect(jsonMatch('{"name":"convert_currency","arguments":{"amount":"25","from":"GBP","to":"USD"}}', reference)).toBe(false);
        expect(jsonMatch('{"name":"convert_currency","arguments":{"amount":25,"from":"GBP","to":"USD"}', reference)).toBe(false);
        expect(jsonMatch("", reference)).toBe(false);
    });

    it("compares a reference that is not JSON as text", () => {
        expect(jsonMatch(" hello \n", "hello")).toBe(true);
        expect(jsonMatch("hello there", "hello")).toBe(false);
    });
});
