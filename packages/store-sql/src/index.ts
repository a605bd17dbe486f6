/**
 * @since 0.1.0
 */
export * as SqlSessionStore from "./SqlSessionStore.js"
