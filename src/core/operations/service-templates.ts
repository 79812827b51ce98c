import { z } from 'zod';
import { validationError } from '../../errors.js';
import type { ComposeContainer } from '../compose.js';
import { generateMagicValues, magicContainerOf, magicVariablesIn } from '../compose-variables.js';
import { defineOperation, type OperationContext } from '../operation.js';
import { listOf, pageInput, pageOf } from '../pagination.js';
import { serviceCatalog, TEMPLATE_TYPE } from '../service-templates/catalog.js';
import type { ServiceTemplate } from '../service-templates/template.js';
import { READ } from './common.js';

export const LIST_TEMPLATES_TOOL = 'list_service_templates';
export const LIST_TEMPLATES_PATH = '/api/v1/services/templates';

/** `type` of POST /services: a one-click template's name. */
export const templateType = z.string().regex(TEMPLATE_TYPE, 'A template name: letters, digits and . _ - (see list_service_templates).');

const templateSchema = z.object({
  name: z.string(),
  description: z.string(),
  tags: z.array(z.string()),
  documentation: z.string().nullable(),
  /** berth's own catalog, or the operator's (BERTH_SERVICE_TEMPLATES). */
  source: z.enum(['builtin', 'operator']),
});

const view = (t: ServiceTemplate): z.infer<typeof templateSchema> => ({ name: t.type, description: t.slogan, tags: t.tags, documentation: t.documentation, source: t.source });

/** The template a create names, or the 422 that points at the list. */
export async function templateFor(ctx: Pick<OperationContext, 'config' | 'logger'>, type: string): Promise<ServiceTemplate> {
  const t = (await serviceCatalog(ctx.config.serviceTemplates, ctx.logger)).byType.get(type);
  if (!t) throw validationError({ type: [`Unknown service type "${type}". ${LIST_TEMPLATES_TOOL} (GET ${LIST_TEMPLATES_PATH}) lists the types.`] });
  return t;
}

/**
 * The environment a new service of a template starts with: a fresh value for every magic variable
 * its compose file names (distinct per service), for the service's own variables.
 */
export function templateEnvironment(yaml: string, serviceUuid: string, containers: ComposeContainer[]): Record<string, string> {
  return generateMagicValues(magicVariablesIn(yaml), serviceUuid, magicContainerOf(containers));
}

export const serviceTemplateOperations = [
  defineOperation({
    name: LIST_TEMPLATES_TOOL,
    title: 'List one-click service templates',
    description:
      "List the one-click service templates (Coolify's names: uptime-kuma, n8n, ...). Create one with create_service {type: name}: its passwords and users are generated per service as the service's variables.",
    summary: 'List the one-click service templates (name, description, tags) that create_service takes as type.',
    permission: 'read',
    toolset: 'services',
    input: () =>
      z.strictObject({
        ...pageInput,
        search: z.string().max(100).optional().describe('Only templates whose name, description or tags contain this (any case).'),
      }),
    output: () => listOf(templateSchema),
    annotations: READ,
    http: { method: 'GET', path: LIST_TEMPLATES_PATH, list: true },
    async run(ctx, { search, ...p }) {
      const { all } = await serviceCatalog(ctx.config.serviceTemplates, ctx.logger);
      const q = search?.toLowerCase();
      const hits = q ? all.filter((t) => [t.type, t.slogan, ...t.tags].some((s) => s.toLowerCase().includes(q))) : all;
      return pageOf(hits.map(view), p);
    },
  }),
];
