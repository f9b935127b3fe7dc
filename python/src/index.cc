#include "bindings.h"

namespace neardup::python {

void RegisterIndex(py::module_& /*m*/) {}

}  // namespace neardup::python
