// check.mjs verifies the golden files of package tokens against OpenAI's own
// tiktoken (the WebAssembly build of its Rust core, published on npm):
//
//	cd "$(mktemp -d)" && npm install tiktoken@1.0.22 && \
//	  NODE_PATH=$PWD/node_modules node /path/to/bench/tokens/golden/check.mjs /path/to/tokens/testdata
//
// It prints one line per file and exits non-zero on any difference.
import { readFileSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const require = createRequire(join(process.env.NODE_PATH ?? ".", "x"));
const { get_encoding } = require("tiktoken");
const dir = process.argv[2] ?? "../tokens/testdata";
let bad = 0;
for (const name of ["cl100k_base", "o200k_base"]) {
  const enc = get_encoding(name);
  for (const f of readdirSync(join(dir, "corpus")).filter((f) => f.endsWith(".txt"))) {
    const text = readFileSync(join(dir, "corpus", f), "utf8");
    const want = readFileSync(join(dir, "golden", name, f.replace(/\.txt$/, ".golden")), "utf8").split("\n");
    const lines = text.split(/(?<=\n)/).filter((l) => l !== "");
    lines.push(text);
    let diffs = 0;
    lines.forEach((line, i) => {
      const got = Array.from(enc.encode_ordinary(line)).join(" ");
      if (got !== want[i]) {
        diffs++;
        if (diffs <= 3) console.log(`${name} ${f} line ${i + 1}: ${JSON.stringify(line).slice(0, 80)}\n  tiktoken ${got.slice(0, 200)}\n  golden   ${want[i]?.slice(0, 200)}`);
      }
    });
    console.log(`${name} ${f}: ${lines.length - diffs}/${lines.length} lines agree`);
    bad += diffs;
  }
  enc.free();
}
process.exit(bad ? 1 : 0);
