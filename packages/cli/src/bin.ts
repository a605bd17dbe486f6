#!/usr/bin/env node
/**
 * The `sessionflow` executable: see `Cli.ts` and `sessionflow help`.
 *
 * @since 0.1.0
 */
import * as Cli from "./Cli.js"

Cli.runMain(Cli.main(process.argv.slice(2)))
