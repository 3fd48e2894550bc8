// Typesets the book's formulas once, when the book is built (book/_ext/static_math.py): TeX in, MathJax's CHTML out.
// Usage: node static_math.js MATHJAX_DIR IN.json OUT.json
//   IN.json:  {"fontURL": "...", "items": [["tex", display], ...]}
//   OUT.json: {"html": ["<mjx-container ...>", ...], "css": "..."}
const fs = require("fs");
const [dir, input, output] = process.argv.slice(2);
const job = JSON.parse(fs.readFileSync(input, "utf8"));
require(dir + "/node-main.js").init({
  loader: {paths: {mathjax: dir}, load: ["input/tex-base", "[tex]/ams", "output/chtml", "adaptors/liteDOM", "a11y/assistive-mml"]},
  tex: {packages: {"[+]": ["ams"]}},
  chtml: {fontURL: job.fontURL, scale: job.scale, matchFontHeight: false},
  startup: {typeset: false},
}).then((MathJax) => {
  const adaptor = MathJax.startup.adaptor;
  const html = job.items.map(([tex, display]) => adaptor.outerHTML(MathJax.tex2chtml(tex, {display: display})));
  const css = adaptor.textContent(MathJax.chtmlStylesheet());
  fs.writeFileSync(output, JSON.stringify({html: html, css: css}));
}).catch((err) => {
  console.error(String(err && err.stack || err));
  process.exit(1);
});
