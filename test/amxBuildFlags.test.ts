// scripts/amxBuildFlags.mjs as the build scripts call it: with a stand-in compiler whose -march=native
// does or does not enable AMX, and whose "probe" works, faults or is refused, it prints the flags
// that take AMX out exactly when the probe does not work, and says why on stderr.
import {spawnSync} from "node:child_process";
import {chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {afterAll, describe, expect, it} from "vitest";

const root = new URL("../", import.meta.url).pathname;
const scratch = mkdtempSync(join(tmpdir(), "specgate-amx-flags-"));
afterAll(() => rmSync(scratch, {recursive: true, force: true}));

const compiler = join(scratch, "c++");
const calls = join(scratch, "calls");
// -dM -E: the macros of -march=native (AMX's when STAND_IN_AMX=1); otherwise a compile of the probe,
// whose program behaves as STAND_IN_PROBE says.
writeFileSync(
    compiler,
    `#!/bin/sh
echo "$*" >> ${JSON.stringify(calls)}
for arg; do
    if [ "$arg" = "-dM" ]; then
        echo "#define __AVX512F__ 1"
        [ "$STAND_IN_AMX" = 1 ] && echo "#define __AMX_TILE__ 1"
        exit 0
    fi
done
[ "$STAND_IN_PROBE" = uncompilable ] && { echo "amxProbe.cpp:12: error: AMX intrinsics unknown" >&2; exit 1; }
out=""; previous=""
for arg; do [ "$previous" = "-o" ] && out="$arg"; previous="$arg"; done
case "$STAND_IN_PROBE" in
    works) printf '#!/bin/sh\\nexit 0\\n' ;;
    faults) printf '#!/bin/sh\\nkill -ILL $$\\n' ;;
    refused) printf '#!/bin/sh\\necho "the kernel refused the AMX tile data state"\\nexit 2\\n' ;;
esac > "$out"
chmod +x "$out"
`
);
chmodSync(compiler, 0o755);

function amxFlags(env: Record<string, string>): {flags: string; note: string; calls: string[]} {
    writeFileSync(calls, "");
    const result = spawnSync(process.execPath, [join(root, "scripts", "amxBuildFlags.mjs")], {
        encoding: "utf8",
        env: {PATH: process.env.PATH, CXX: compiler, ...env}
    });
    expect(result.status, result.stderr).toBe(0);
    return {flags: result.stdout.trim(), note: result.stderr.trim(), calls: readFileSync(calls, "utf8").trim().split("\n")};
}

const withoutAmx = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16";

describe.runIf(process.platform === "linux" && process.arch === "x64")("the AMX build flags", () => {
    it("are none, without a probe, where -march=native does not enable AMX", () => {
        const {flags, note, calls} = amxFlags({STAND_IN_AMX: "0", STAND_IN_PROBE: "faults"});
        expect(flags).toBe("");
        expect(note).toBe("");
        expect(calls).toHaveLength(1);
    });

    it("are none where the probe's tile product works, and the probe is built with the build's flags", () => {
        const {flags, note, calls} = amxFlags({STAND_IN_AMX: "1", STAND_IN_PROBE: "works", CXXFLAGS: "-mno-avx512f  -g"});
        expect(flags).toBe("");
        expect(note).toBe("specgate: AMX tiles work here: ggml keeps its AMX kernels");
        expect(calls[0]).toMatch(/^-mno-avx512f -g -march=native -dM -E /);
        expect(calls[1]).toMatch(/^-mno-avx512f -g -O3 -march=native \S*scripts\/amxProbe\.cpp -o /);
    });

    it.each([
        ["faults", "the first AMX tile instruction raised SIGILL"],
        ["refused", "the kernel refused the AMX tile data state"],
        ["uncompilable", "the AMX probe did not compile (amxProbe.cpp:12: error: AMX intrinsics unknown)"]
    ])("take AMX out where the probe %s, and say why", (probe, reason) => {
        const {flags, note} = amxFlags({STAND_IN_AMX: "1", STAND_IN_PROBE: probe});
        expect(flags).toBe(withoutAmx);
        expect(note).toContain(`specgate: building without AMX (${withoutAmx}): ${reason}`);
    });
});
