/**
 * @since 0.1.0
 */
export * as PgSessionStore from "./PgSessionStore.js"
