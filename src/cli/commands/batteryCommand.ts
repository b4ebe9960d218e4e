import type {Command} from "commander";
import type {BatteryItem} from "../../batteries/BatteryItem.js";
import {loadBattery} from "../../batteries/loadBattery.js";

/** One line per battery: items, and how many of them per task, language and scorer. */
export function describeBattery(spec: string, items: readonly BatteryItem[]): string {
    const counts = (values: readonly (string | undefined)[]): string => {
        const tally = new Map<string, number>();
        for (const value of values) if (value !== undefined) tally.set(value, (tally.get(value) ?? 0) + 1);
        return tally.size === 0 ? "none" : [...tally].map(([value, count]) => `${value} ${count}`).join(", ");
    };
    return (
        `${spec}: ${items.length} items; tasks: ${counts(items.map((item) => item.task))}; ` +
        `languages: ${counts(items.map((item) => item.language))}; scorers: ${counts(items.map((item) => item.scorer))}\n`
    );
}

/**
 * `specgate battery check SPEC…`: loads each battery (a .jsonl/.tsv/.csv file or a named dataset) as
 * every audit would, and prints what it holds; the first malformed row is reported with its file,
 * line and field (exit 2). Nothing is generated.
 */
export function registerBatteryCommand(program: Command): void {
    const battery = program.command("battery").description("battery files: check one before a long run");
    battery
        .command("check")
        .description(
            "load batteries as the audits do (a .jsonl, .tsv or .csv file, or a named dataset such as mgsm:de@20) and say what each holds; a malformed row is named by file, line and field (format: docs/audits.md, schema: docs/battery-item.schema.json)"
        )
        .argument("<battery...>", "battery specs or files")
        .option("--data-dir <DIR>", "folder of the named datasets (default: $SPECGATE_DATA_DIR, else ../shared/data)")
        .action(async (specs: string[], options: {dataDir?: string}) => {
            for (const spec of specs) {
                const items = await loadBattery(spec, ...(options.dataDir !== undefined ? [options.dataDir] : []));
                process.stdout.write(describeBattery(spec, items));
            }
        });
}
