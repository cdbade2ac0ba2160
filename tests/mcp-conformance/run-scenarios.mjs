// Runs every client scenario of the official MCP conformance suite
// (@modelcontextprotocol/conformance, `npm ci` here first) against Confab's
// MCP client, one scenario at a time: the suite starts the scenario's
// server and runs the client command given as the first argument (built
// from conformance-client.c) with the server's URL. A scenario passes when
// none of its checks is a FAILURE (warnings are reported, not failed).
// Prints a line per scenario and exits 1 when a scenario fails that
// expected-failures.txt does not list, or passes while listed there;
// exit 77 (skipped) without node_modules.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const here = path.dirname(new URL(import.meta.url).pathname);
const cli = path.join(here, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const client = process.argv[2];

if (!fs.existsSync(cli)) {
	console.log('SKIP: tests/mcp-conformance/node_modules is missing (npm ci there)');
	process.exit(77);
}
if (!client || !fs.existsSync(client)) {
	console.error('usage: run-scenarios.mjs CLIENT_COMMAND');
	process.exit(2);
}

function conformance(args) {
	return spawnSync(process.execPath, ['--import', path.join(here, 'node20.mjs'), cli, ...args], {
		encoding: 'utf8',
		timeout: 120000,
		env: { ...process.env, NO_COLOR: '1' },
	});
}

const expected = new Set(
	fs.readFileSync(path.join(here, 'expected-failures.txt'), 'utf8')
		.split('\n')
		.map((line) => line.replace(/#.*/, '').trim())
		.filter((line) => line !== ''),
);

// the client scenarios, as the suite lists them
const listing = conformance(['list']);
const scenarios = [];
let inClient = false;
for (const line of listing.stdout.split('\n')) {
	if (line.startsWith('Client scenarios'))
		inClient = true;
	else if (!line.startsWith('  '))
		inClient = inClient && line.trim() === '';
	const m = inClient && line.match(/^\s+- (\S+)/);
	if (m)
		scenarios.push(m[1]);
}
if (scenarios.length === 0) {
	console.error('the suite listed no client scenarios:\n' + listing.stdout + listing.stderr);
	process.exit(1);
}

const out = fs.mkdtempSync(path.join(os.tmpdir(), 'confab-mcp-conformance-'));
const counts = { pass: 0, xfail: 0, fail: 0, xpass: 0 };
for (const scenario of scenarios) {
	const dir = path.join(out, scenario.replace(/\//g, '_'));
	const run = conformance(['client', '--command', client, '--scenario', scenario, '-o', dir]);
	let checks = [];
	for (const sub of fs.existsSync(dir) ? fs.readdirSync(dir, { recursive: true }) : []) {
		if (path.basename(sub) === 'checks.json')
			checks = checks.concat(JSON.parse(fs.readFileSync(path.join(dir, sub), 'utf8')));
	}
	const failed = checks.filter((c) => c.status === 'FAILURE');
	const warned = checks.filter((c) => c.status === 'WARNING');
	const passed = checks.length > 0 && failed.length === 0 && run.status === 0;
	let verdict;
	if (passed)
		verdict = expected.has(scenario) ? 'xpass' : 'pass';
	else
		verdict = expected.has(scenario) ? 'xfail' : 'fail';
	counts[verdict]++;
	const label = { pass: 'PASS', xfail: 'expected failure', fail: 'FAIL', xpass: 'UNEXPECTED PASS' }[verdict];
	console.log(`${label}: ${scenario}` +
		(warned.length > 0 ? ` (warnings: ${warned.map((c) => c.id).join(', ')})` : ''));
	if (verdict === 'fail') {
		for (const c of failed)
			console.log(`    ${c.id}: ${c.errorMessage ?? c.description}`);
		if (checks.length === 0)
			console.log(run.stdout + run.stderr);
		for (const name of ['stdout.txt', 'stderr.txt']) {
			for (const sub of fs.existsSync(dir) ? fs.readdirSync(dir, { recursive: true }) : []) {
				if (path.basename(sub) === name)
					console.log(`    client ${name}: ` + fs.readFileSync(path.join(dir, sub), 'utf8').trim());
			}
		}
	}
	if (verdict === 'xpass')
		console.log('    it passes now: remove it from expected-failures.txt');
}
fs.rmSync(out, { recursive: true, force: true });
console.log(`${scenarios.length} client scenarios: ${counts.pass} passed, ${counts.xfail} expected ` +
	`failures, ${counts.fail} failed, ${counts.xpass} passed unexpectedly`);
process.exit(counts.fail + counts.xpass > 0 ? 1 : 0);
