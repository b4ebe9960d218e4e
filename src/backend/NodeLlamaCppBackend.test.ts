import {vi} from "vitest";
import {modelTestTimeouts} from "../testing/modelTestTimeouts.js";
import {NodeLlamaCppBackend} from "./NodeLlamaCppBackend.js";
import {describeBackendContract} from "./testing/describeBackendContract.js";

vi.setConfig(modelTestTimeouts);

describeBackendContract("NodeLlamaCppBackend", (path, options) => NodeLlamaCppBackend.load(path, options));
