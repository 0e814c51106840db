// MathJax 3 for pymdownx.arithmatex (generic mode): it wraps every $...$ and $$...$$ of the pages in
// <span class="arithmatex">\(...\)</span> or <div class="arithmatex">\[...\]</div>, and only those are typeset.
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex"
  }
};

// typeset again after each page change of mkdocs-material's instant navigation
document$.subscribe(() => {
  MathJax.startup.output.clearCache()
  MathJax.typesetClear()
  MathJax.texReset()
  MathJax.typesetPromise()
})
