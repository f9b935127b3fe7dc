#include "bindings.h"

namespace neardup::python {

void RegisterJieba(py::module_& /*m*/) {}

}  // namespace neardup::python
