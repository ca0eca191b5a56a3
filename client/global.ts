/**
 * Entry of the script-tag build (`client/dist/logger.global.js`): the
 * library under one global, `LogIngest`.
 *
 * @module
 */
import * as LogIngest from "./mod.ts";

(globalThis as { LogIngest?: typeof LogIngest }).LogIngest = LogIngest;
