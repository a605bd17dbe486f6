#!/usr/bin/env -S npx tsx
import { NodeRuntime } from "@effect/platform-node"
import { main } from "./CoreDemo.js"

NodeRuntime.runMain(main)
