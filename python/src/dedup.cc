#include "bindings.h"

namespace neardup::python {

void RegisterDedup(py::module_& /*m*/) {}

}  // namespace neardup::python
