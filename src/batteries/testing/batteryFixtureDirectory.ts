import {dirname, resolve} from "node:path";
import {fileURLToPath} from "node:url";

/** The committed slices of the shared datasets (test/fixtures/batteries), laid out like ../shared/data. */
export const batteryFixtureDirectory = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "test", "fixtures", "batteries");
