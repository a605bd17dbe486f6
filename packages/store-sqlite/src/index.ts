/**
 * @since 0.1.0
 */
export * as SqliteSessionStore from "./SqliteSessionStore.js"
