func.func @main(%c: i1) {
  cf.cond_br %c, ^yes, ^no
^yes:
  return
^no:
  return
}
