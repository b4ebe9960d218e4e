import {NodeLlamaCppBackend} from "./NodeLlamaCppBackend.js";
import {describeBackendContract} from "./testing/describeBackendContract.js";

describeBackendContract("NodeLlamaCppBackend", (path, options) => NodeLlamaCppBackend.load(path, options));
