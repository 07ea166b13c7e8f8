// Parse every math fragment of the given Markdown files with KaTeX; print one line per
// error and exit 1 if there is any.  Usage: node katex_check.js FILE.md...
// KaTeX is looked up through NODE_PATH (see .ci/run and tests/integration/test_docs.py).
const fs = require("fs");
const katex = require("katex");

let errors = 0, fragments = 0;
for (const file of process.argv.slice(2)) {
  const text = fs.readFileSync(file, "utf8");
  // $$…$$ first (display), then $…$ (inline); \$ is an escaped dollar, not math
  const pattern = /\$\$([\s\S]+?)\$\$|(?<!\\)\$((?:\\\$|[^$\n])+?)\$/g;
  for (const match of text.matchAll(pattern)) {
    const tex = match[1] !== undefined ? match[1] : match[2];
    fragments += 1;
    try {
      katex.renderToString(tex, { displayMode: match[1] !== undefined, throwOnError: true, strict: "error" });
    } catch (err) {
      errors += 1;
      const line = text.slice(0, match.index).split("\n").length;
      console.log(`${file}:${line}: ${err.message.split("\n")[0]}`);
    }
  }
}
console.log(`${fragments} math fragments, ${errors} errors`);
process.exit(errors ? 1 : 0);
