/**
 * @since 0.1.0
 */
export * as Cli from "./Cli.js"

/**
 * @since 0.1.0
 */
export * as CommandLine from "./CommandLine.js"

/**
 * @since 0.1.0
 */
export * as Dev from "./Dev.js"

/**
 * @since 0.1.0
 */
export * as Init from "./Init.js"
