// Node 20 has no fs.globSync, which the conformance suite's bundle imports
// by name for its tier-check command (Node 22). Client mode never calls it:
// this gives the bundle an fs that has it (and throws if it is ever called).
// Used as: node --import ./node20.mjs …/conformance/dist/index.js client …
import { register } from 'node:module';
import fs from 'node:fs';

if (typeof fs.globSync !== 'function')
	register('./node20-hooks.mjs', import.meta.url);
