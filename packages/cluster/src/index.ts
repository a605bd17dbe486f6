/**
 * @since 0.1.0
 */
export * as ClusterPlacement from "./ClusterPlacement.js"
