// neardup._neardup: the extension module. Each part registers itself (bindings.h); the pure-Python
// package (python/neardup) is the interface users import.
#include "bindings.h"

PYBIND11_MODULE(_neardup, m) {
  m.doc() = "neardup's C++ core: signing, the online index, dedup, jieba-identical segmentation";
  neardup::python::RegisterErrors(m);
  neardup::python::RegisterSigning(m);
  neardup::python::RegisterIndex(m);
  neardup::python::RegisterDedup(m);
  neardup::python::RegisterJieba(m);
  neardup::python::RegisterDistributed(m);
}
