/**
 * A lint rule that measures functions: every function declaration,
 * function expression, arrow function and method (JSX components are
 * functions too), from its first line to its last, nested functions
 * counted in the one that holds them. The structure test runs it on every
 * source file through `Deno.lint.runPlugin`.
 *
 * @module
 */

/** A function found longer than the cap. */
export interface LongFunction {
  /** The first line, counted from 1. */
  line: number;
  lines: number;
  name: string;
}

/** The name a function is known by: its own, or the binding or key it is given to. */
function nameOf(node: Deno.lint.Node): string {
  const own = (node as { id?: { name?: string } | null }).id?.name;
  if (own) return own;
  const parent = (node as { parent?: Deno.lint.Node }).parent;
  if (
    parent?.type === "VariableDeclarator" && parent.id.type === "Identifier"
  ) {
    return parent.id.name;
  }
  if (
    (parent?.type === "MethodDefinition" || parent?.type === "Property") &&
    parent.key.type === "Identifier"
  ) return parent.key.name;
  return "(anonymous)";
}

/** The functions of `source` longer than `maxLines`, in source order. */
export function longFunctions(
  fileName: string,
  source: string,
  maxLines: number,
): LongFunction[] {
  const lineStarts = [0];
  for (let i = source.indexOf("\n"); i >= 0; i = source.indexOf("\n", i + 1)) {
    lineStarts.push(i + 1);
  }
  const lineOf = (offset: number) => {
    let low = 0, high = lineStarts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if (lineStarts[mid]! <= offset) low = mid;
      else high = mid - 1;
    }
    return low + 1;
  };
  const plugin: Deno.lint.Plugin = {
    name: "house",
    rules: {
      "max-function-lines": {
        create(context) {
          const measure = (node: Deno.lint.Node) => {
            const [start, end] = node.range;
            const lines = lineOf(end) - lineOf(start) + 1;
            if (lines > maxLines) {
              context.report({
                node,
                message: JSON.stringify({
                  line: lineOf(start),
                  lines,
                  name: nameOf(node),
                }),
              });
            }
          };
          return {
            FunctionDeclaration: measure,
            FunctionExpression: measure,
            ArrowFunctionExpression: measure,
          };
        },
      },
    },
  };
  return Deno.lint.runPlugin(plugin, fileName, source)
    .map((d) => JSON.parse(d.message) as LongFunction)
    .sort((a, b) => a.line - b.line);
}
