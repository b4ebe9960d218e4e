/**
 * The built-in prompt battery for `specgate bench --prompts battery` until the trained model family
 * ships its synthetic test split: short prompts of mixed kinds (prose, arithmetic, a tool call, a
 * non-Latin script), so per-prompt acceptance varies as it does on real traffic.
 */
export const defaultBenchPrompts: readonly string[] = [
    "Once upon a time, in a small village by the sea,",
    "Question: Tom has 3 apples and buys 5 more. How many apples does he have?\nAnswer:",
    'Call the search tool: {"name": "search", "arguments": {"query": "weather", "limit":',
    "東京は日本の首都で、",
    "def fibonacci(n):\n    ",
    "The three primary colours are"
];
