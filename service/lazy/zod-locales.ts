/**
 * zod's `locales` (its error messages in 60-odd languages, one module each), loaded on first use.
 * zod requires them all when it loads (`z.locales`, `z.core.locales`) though it uses only English,
 * which its schemas module loads by itself; the service never asks for another: ~45 ms of CPU and
 * their compiled code at every start. lean-start.ts hands this module to zod's own requires of its
 * locales index; `z.locales.fr` (or any other property) still loads and answers the real module.
 *
 * zod's interop asks `__esModule` first (its `__importStar` returns such a module as it is): that is
 * answered without loading. Everything else loads the real module (`zod/v4/locales`, the file the
 * hook redirected, which lean-start checks). Before that, property descriptors (what module interop
 * inspects, e.g. tsx when run from source) show an empty module (module-proxy.ts).
 */
import { lazyModule } from "./module-proxy";

export = lazyModule(() => require("zod/v4/locales") as object, { esModule: true });
