import { SessionStore } from "@sessionflow/core"
import { suite } from "./SessionStoreSuite.js"

suite("SessionStore.layerMemory", SessionStore.layerMemory)
