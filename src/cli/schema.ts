import { writeFileSync } from 'node:fs';
import { publishedJsonSchema } from '../model/schema.ts';

export function schemaText(): string {
  return `${JSON.stringify(publishedJsonSchema(), null, 2)}\n`;
}

export function schemaCommand(out?: string): number {
  if (out) writeFileSync(out, schemaText());
  else process.stdout.write(schemaText());
  return 0;
}
