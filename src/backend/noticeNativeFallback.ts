import {type GpuChoice, resolveGpu} from "./gpuChoice.js";
import {buildCommandOf, nativeBackendProblem} from "./nativeAddon.js";

let noticed = false;

/**
 * One line on stderr, once per process, when `--backend auto` runs a model on node-llama-cpp because
 * no native addon build for `gpu` loads: what the models run on, why, and the command that builds
 * the addon. Never a silent fall-back to the slower backend.
 */
export function noticeNativeFallback(gpu: GpuChoice): void {
    if (noticed) return;
    noticed = true;
    const build = resolveGpu(gpu).build;
    const problem = nativeBackendProblem(build) ?? `the ${build} native backend does not load here`;
    const fix = problem.includes(buildCommandOf(build)) ? "" : `; \`${buildCommandOf(build)}\` builds it`;
    process.stderr.write(
        `specgate: running on node-llama-cpp (slower, no --json-schema), because ${problem}${fix}; --backend node-llama-cpp chooses it without this note\n`
    );
}
