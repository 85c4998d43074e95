/**
 * A CLI command as the operator can paste it: in a clone of the repository the sources run through npm's script
 * (`npm run modelgate -- …`; no `modelgate` binary is on the path there), where the package is installed through
 * `npx modelgate …`. The built CLI is JavaScript; the sources are TypeScript run by tsx.
 */
export const cliCommand = (args: string, moduleUrl: string = import.meta.url): string =>
  moduleUrl.endsWith('.ts') ? `npm run modelgate -- ${args}` : `npx modelgate ${args}`
