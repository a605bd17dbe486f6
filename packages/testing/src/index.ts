/**
 * Crash tests: kill a real process running the workflow at each durable
 * boundary of its run, carry the run on in a new one, and compare with an
 * uninterrupted run.
 *
 * @since 0.1.0
 */
export * as CrashTest from "./CrashTest.js"
