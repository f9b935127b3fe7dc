#include "bindings.h"

namespace neardup::python {

void RegisterSigning(py::module_& /*m*/) {}

}  // namespace neardup::python
