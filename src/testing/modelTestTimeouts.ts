/**
 * Timeouts for a test file that loads GGUF models and decodes with them (llama.cpp on a 2-core CI
 * machine, sometimes on Mesa's software Vulkan device): `vi.setConfig(modelTestTimeouts)` at the top
 * of the file. Every other test keeps vitest.config.ts's 10 s, so a hung unit test fails fast.
 */
export const modelTestTimeouts = {testTimeout: 120_000, hookTimeout: 120_000} as const;
