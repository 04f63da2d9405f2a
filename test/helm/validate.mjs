// Validates rendered Kubernetes manifests offline against the Kubernetes OpenAPI schemas
// (npm kubernetes-models; ServiceMonitor with @kubernetes-models/prometheus-operator).
//
//   node validate.mjs [--json OUT] FILE|-
//
// FILE holds YAML documents (`helm template` output). Every object must be of a known
// apiVersion/kind and pass its model's validate(); duplicate keys are errors too. With
// --json, the objects are written to OUT as one JSON array (for the checks in
// chart_test.py). Exits 1 with one line per problem. The npm packages come from
// tools/setup_k8s_tools.sh: build/tools/k8s, or SILO_K8S_TOOLS_DIR.
//
// kubernetes-models checks types, required fields and formats, but not unknown fields: a
// misspelled optional field passes here (chart_test.py checks the fields that matter).
import { createRequire } from 'node:module';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const toolsDir = process.env.SILO_K8S_TOOLS_DIR || resolve(here, '../../build/tools/k8s');
const require = createRequire(join(toolsDir, 'package.json'));

// apiVersion -> npm module holding its models.
function modulePath(apiVersion) {
  if (apiVersion === 'monitoring.coreos.com/v1') {
    return '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
  }
  return `kubernetes-models/${apiVersion}`;
}

function main(argv) {
  let jsonOut = null;
  const files = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--json') jsonOut = argv[++i];
    else files.push(argv[i]);
  }
  if (files.length !== 1) {
    console.error('usage: node validate.mjs [--json OUT] FILE|-');
    return 2;
  }
  let yaml;
  try {
    yaml = require('yaml');
  } catch (e) {
    console.error(`validate.mjs: npm package yaml not found under ${toolsDir} (run tools/setup_k8s_tools.sh)`);
    return 2;
  }
  const text = readFileSync(files[0] === '-' ? 0 : files[0], 'utf8');
  const problems = [];
  const objects = [];
  const docs = yaml.parseAllDocuments(text, { uniqueKeys: true });
  docs.forEach((doc, n) => {
    for (const e of doc.errors) problems.push(`document ${n + 1}: YAML: ${e.message}`);
    if (doc.errors.length) return;
    const obj = doc.toJS();
    if (obj === null || obj === undefined) return;
    const where = `${obj.kind ?? '?'} ${obj.metadata?.name ?? '?'} (document ${n + 1})`;
    if (typeof obj.apiVersion !== 'string' || typeof obj.kind !== 'string') {
      problems.push(`${where}: no apiVersion or kind`);
      return;
    }
    let models;
    try {
      models = require(modulePath(obj.apiVersion));
    } catch (e) {
      problems.push(`${where}: no models for apiVersion ${obj.apiVersion} (${e.code ?? e.message})`);
      return;
    }
    const Model = models[obj.kind];
    if (typeof Model !== 'function') {
      problems.push(`${where}: unknown kind ${obj.kind} in ${obj.apiVersion}`);
      return;
    }
    try {
      new Model(obj).validate();
    } catch (e) {
      const details = (e.errors ?? []).map((x) => `${x.instancePath || '/'} ${x.message}`);
      problems.push(`${where}: ${details.length ? details.join('; ') : e.message}`);
    }
    objects.push(obj);
  });
  if (jsonOut) writeFileSync(jsonOut, JSON.stringify(objects));
  for (const p of problems) console.error(`invalid: ${p}`);
  if (problems.length) return 1;
  console.error(`validate.mjs: ${objects.length} objects valid`);
  return 0;
}

process.exitCode = main(process.argv.slice(2));
