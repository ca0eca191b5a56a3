/**
 * A browser error's stack, and its top frame as an error group keeps it,
 * for the tests that store the error and read the group back; and the
 * smallest source map an upload takes, for the tests of uploads.
 *
 * @module
 */

/** A one-frame browser stack whose top frame is {@link CART_FRAME}. */
export const CART_STACK = "TypeError: cart is undefined\n" +
  "    at pay (https://shop.example.com/app.js:3:9)";

/** The top frame of {@link CART_STACK}, as an error group keeps it. */
export const CART_FRAME = {
  function: "pay",
  file: "https://shop.example.com/app.js",
  line: 3,
  column: 9,
};

/** The smallest source map an upload takes, as JSON text. */
export const SMALLEST_MAP = JSON.stringify({
  version: 3,
  file: "app.min.js",
  sources: ["app.js"],
  names: [],
  mappings: "AAAA",
});
