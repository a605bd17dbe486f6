/**
 * @since 0.1.0
 */
export * as CoreDemo from "./CoreDemo.js"
