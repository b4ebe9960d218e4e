import {SpecgateError} from "../../errors.js";

/** The script that builds llama.cpp's training tools from the llama.cpp bundled with node-llama-cpp. */
export const llamaCppToolsBuildScript = "scripts/buildLlamaCppTools.sh";

/** A llama.cpp tool (llama-finetune, llama-quantize) is not built; the message names it and the build script. */
export class LlamaCppToolMissingError extends SpecgateError {
    public readonly tool: string;
    public readonly path: string;

    public constructor(tool: string, path: string) {
        super(
            "llama_cpp_tool_missing",
            `${tool} not found at ${path}; build it offline with ${llamaCppToolsBuildScript} (or set SPECGATE_LLAMA_CPP_BIN to the folder holding it)`
        );
        this.tool = tool;
        this.path = path;
    }
}
