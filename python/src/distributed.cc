#include "bindings.h"

namespace neardup::python {

void RegisterDistributed(py::module_& /*m*/) {}

}  // namespace neardup::python
