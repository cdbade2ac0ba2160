// Module hooks for node20.mjs: `fs` as the conformance bundle imports it is
// node:fs plus a globSync that says it needs Node 22.
const SHIM = 'confab-node20:fs';

export async function resolve(specifier, context, next) {
	if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL &&
	    context.parentURL.includes('/@modelcontextprotocol/conformance/'))
		return { url: SHIM, format: 'module', shortCircuit: true };
	return next(specifier, context);
}

export async function load(url, context, next) {
	if (url !== SHIM)
		return next(url, context);
	return {
		format: 'module',
		shortCircuit: true,
		source: "export * from 'node:fs';\n" +
			"export { default } from 'node:fs';\n" +
			"export function globSync() {\n" +
			"\tthrow new Error('fs.globSync needs Node 22');\n" +
			'}\n',
	};
}
