/** One thing the small models can learn facts about: its kind, colour and where it is found. */
export interface KnowledgeEntry {
    readonly name: string;
    readonly kind: "fruit" | "animal" | "vehicle" | "tool" | "vegetable";
    readonly color: string;
    readonly place: string;
}

/**
 * The corpus's tiny world: story and description documents state these facts, multiple-choice
 * questions ask about them. Questions are split by their full text, not by fact, so a test question
 * asks a fact that training documents state in other words: knowledge is shared, questions are not.
 */
export const knowledgeTable: readonly KnowledgeEntry[] = [
    {name: "banana", kind: "fruit", color: "yellow", place: "kitchen"},
    {name: "lemon", kind: "fruit", color: "yellow", place: "kitchen"},
    {name: "cherry", kind: "fruit", color: "red", place: "garden"},
    {name: "plum", kind: "fruit", color: "purple", place: "garden"},
    {name: "orange", kind: "fruit", color: "orange", place: "kitchen"},
    {name: "frog", kind: "animal", color: "green", place: "pond"},
    {name: "crow", kind: "animal", color: "black", place: "field"},
    {name: "swan", kind: "animal", color: "white", place: "lake"},
    {name: "fox", kind: "animal", color: "orange", place: "forest"},
    {name: "mouse", kind: "animal", color: "gray", place: "barn"},
    {name: "bus", kind: "vehicle", color: "red", place: "street"},
    {name: "taxi", kind: "vehicle", color: "yellow", place: "street"},
    {name: "tractor", kind: "vehicle", color: "green", place: "field"},
    {name: "boat", kind: "vehicle", color: "white", place: "lake"},
    {name: "hammer", kind: "tool", color: "black", place: "shed"},
    {name: "saw", kind: "tool", color: "gray", place: "shed"},
    {name: "shovel", kind: "tool", color: "brown", place: "garden"},
    {name: "carrot", kind: "vegetable", color: "orange", place: "garden"},
    {name: "pea", kind: "vegetable", color: "green", place: "garden"},
    {name: "potato", kind: "vegetable", color: "brown", place: "field"}
];

export const knowledgeColors: readonly string[] = [...new Set(knowledgeTable.map((entry) => entry.color))];
export const knowledgeKinds: readonly KnowledgeEntry["kind"][] = [...new Set(knowledgeTable.map((entry) => entry.kind))];
export const knowledgePlaces: readonly string[] = [...new Set(knowledgeTable.map((entry) => entry.place))];

/** "an" before a vowel sound, for the names above. */
export function withArticle(name: string): string {
    return `${/^[aeiou]/.test(name) ? "an" : "a"} ${name}`;
}
