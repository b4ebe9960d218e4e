import {Option} from "commander";

/** The help every command that reads batteries gives --data-dir. */
export const dataDirHelp = "folder of the named datasets (mgsm, gsm8k, …) (default: $SPECGATE_DATA_DIR, else ../shared/data)";

/** --data-dir, stored as `dataDirectory`: the name the commands' in-process runners take it by. */
class DataDirectoryOption extends Option {
    public override attributeName(): string {
        return "dataDirectory";
    }
}

/** The --data-dir option of a command that loads batteries by name (its value is `options.dataDirectory`). */
export function dataDirOption(): Option {
    return new DataDirectoryOption("--data-dir <DIR>", dataDirHelp);
}
