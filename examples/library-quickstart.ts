// specgate as a library: open a target/draft pair, generate speculatively and target-only, stream,
// serve in-process, simulate one verification step and compute TAIS from counts. docs/library.md
// walks through it; the packaging test (test/packedPackage.test.ts) type-checks and runs this file
// against the packed package, installed in a scratch project.
//
//   node library-quickstart.js [TARGET.gguf] [DRAFT.gguf]
import {
    computeTais,
    createServeApp,
    generate,
    openModelPair,
    parseCountsCsv,
    parsePolicySpec,
    simulate,
    SpecgateError,
    streamGeneration,
    type GenerationOptionsInput
} from "specgate";

const [targetPath = "models/target/model.gguf", draftPath = "models/draft/model.gguf"] = process.argv.slice(2);
const prompt = "Question: Tom has 12 candies. He gives 7 to a friend. How many candies does Tom have left?\nAnswer:";

// Greedy decoding (temperature 0) with lossless `strict` verification: the speculative output is the
// target's own, token for token.
const options: GenerationOptionsInput = {
    policy: parsePolicySpec("strict"),
    gamma: 4,
    maxTokens: 24,
    stop: ["\n"],
    sampling: {temperature: 0}
};

const pair = await openModelPair({target: targetPath, draft: draftPath});
try {
    const speculative = await generate(pair.target, pair.draft, prompt, options);
    const targetOnly = await generate(pair.target, undefined, prompt, options);
    console.log(`speculative: ${JSON.stringify(speculative.text)} (${speculative.finishReason})`);
    console.log(`target-only: ${JSON.stringify(targetOnly.text)}`);
    console.log(`identical: ${speculative.text === targetOnly.text}`);
    console.log(
        `acceptance ${(100 * speculative.telemetry.acceptanceRate).toFixed(1)}%, ` +
            `mean acceptance length ${speculative.telemetry.meanAcceptanceLength.toFixed(2)}`
    );

    // Streaming: each chunk is the text one verification step emitted. An AbortSignal stops it.
    const controller = new AbortController();
    let streamed = "";
    for await (const chunk of streamGeneration(pair.target, pair.draft, prompt, options, {signal: controller.signal}))
        streamed += chunk.text;
    console.log(`streamed the same text: ${streamed === speculative.text}`);

    // The OpenAI-compatible server as an in-process app (put app.fetch on a port to serve it).
    const server = createServeApp({target: pair.target, draft: pair.draft, modelName: "family"});
    const response = await server.app.request("/v1/completions", {
        method: "POST",
        headers: {"content-type": "application/json"},
        body: JSON.stringify({model: "family", prompt, max_tokens: 24, temperature: 0, stop: ["\n"]})
    });
    const completion = (await response.json()) as {choices: {text: string}[]};
    console.log(`served: ${response.status} ${JSON.stringify(completion.choices[0].text)}`);
    await server.shutdown();
} finally {
    await pair.dispose();
}

// One verification step, simulated: no model needed.
const report = simulate(
    {
        policy: {kind: "strict"},
        targetProbs: [
            [0.6, 0.3, 0.1],
            [0.2, 0.5, 0.3]
        ],
        draftProbs: [[0.5, 0.4, 0.1]],
        draftTokens: "sample"
    },
    {samples: 20_000, seed: 7}
);
console.log(
    `simulated acceptance ${report.acceptanceRate.overall.toFixed(3)} (analytic ${report.analytic?.alphaPerPosition[0].toFixed(3)})`
);

// TAIS from pass counts.
const tais = computeTais(
    parseCountsCsv(
        "cell_id,task,arm,n_total,n_safety_pass\n" + "demo,refusal,target_only,4000,3160\n" + "demo,refusal,speculative,4000,3152\n"
    )
);
console.log(`TAIS: ${tais.cells[0].classification}`);

// Bad input is a typed error (a SpecgateError) with a stable code and the field at fault.
try {
    parsePolicySpec("nonsense", "policy");
} catch (error) {
    if (error instanceof SpecgateError) console.log(`refused (${error.code}, ${error.field}): ${error.message}`);
    else throw error;
}
