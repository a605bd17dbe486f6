#!/usr/bin/env -S npx tsx --conditions=@sessionflow/source
/**
 * The examples' command (`npm start`): see `Cli.ts` and `npm start -- help`.
 *
 * @since 0.1.0
 */
import { NodeRuntime } from "@effect/platform-node"
import * as Cli from "./Cli.js"

NodeRuntime.runMain(Cli.main(process.argv.slice(2)), { disableErrorReporting: true })
