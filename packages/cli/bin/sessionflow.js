#!/usr/bin/env node
// The `sessionflow` command; the program is compiled to ../dist (npm run build).
import "../dist/bin.js"
