import { Template } from "@huggingface/jinja";
import { Tokenizer } from "@huggingface/tokenizers";
import { BringupError } from "../../common/errors.js";

export interface ChatMessage {
  readonly role: string;
  readonly content: string;
}

export interface ChatTemplateOptions {
  /** Append the assistant turn's opening so the model answers (default true). */
  readonly addGenerationPrompt?: boolean;
  /**
   * A Jinja template to render instead of the model's (vLLM's per-request chat_template); its
   * errors are CHAT_TEMPLATE_INVALID or CHAT_TEMPLATE_FAILED with the subject "chat_template".
   */
  readonly template?: string;
}

/** The variables a chat template sees (a type, not an interface, so it passes as Jinja's record). */
export type ChatTemplateContext = {
  readonly messages: readonly ChatMessage[];
  readonly add_generation_prompt: boolean;
  readonly bos_token: string;
  readonly eos_token: string;
};

/**
 * A model's tokenizer: HF tokenizer.json through @huggingface/tokenizers, the chat template of
 * tokenizer_config.json through @huggingface/jinja.
 */
export class TextTokenizer {
  private readonly inner: Tokenizer;
  private readonly template: Template | undefined;
  private readonly specialIds: ReadonlySet<number>;
  private readonly bosToken: string | undefined;
  private readonly eosToken: string | undefined;
  /** Each token's text once decoded (logprobs name many tokens, many times). */
  private readonly tokenTexts: string[] = [];
  /** Token ids that end generation: the model config's eos ids plus the tokenizer's eos token. */
  readonly eosTokenIds: readonly number[];
  /** The number of token ids the tokenizer can produce. */
  readonly size: number;

  constructor(
    tokenizerJson: unknown,
    tokenizerConfig: unknown,
    options: { readonly eosTokenIds?: readonly number[]; readonly source?: string } = {},
  ) {
    const source = options.source ?? "tokenizer.json";
    if (typeof tokenizerJson !== "object" || tokenizerJson === null) {
      throw new BringupError("TOKENIZER_INVALID", `${source} is not a JSON object.`, { subject: source });
    }
    const config = (
      typeof tokenizerConfig === "object" && tokenizerConfig !== null ? tokenizerConfig : {}
    ) as Record<string, unknown>;
    try {
      this.inner = new Tokenizer(tokenizerJson, config);
    } catch (cause) {
      throw new BringupError(
        "TOKENIZER_INVALID",
        `${source} could not be loaded: ${(cause as Error).message}`,
        { subject: source, cause },
      );
    }
    const added = this.inner.get_added_tokens_decoder();
    this.specialIds = new Set([...added.entries()].filter(([, t]) => t.special).map(([id]) => id));
    const vocab = (tokenizerJson as { model?: { vocab?: Record<string, number> } }).model?.vocab ?? {};
    let maxId = -1;
    for (const id of Object.values(vocab)) maxId = Math.max(maxId, id);
    for (const id of added.keys()) maxId = Math.max(maxId, id);
    this.size = maxId + 1;
    this.bosToken = tokenText(config.bos_token);
    this.eosToken = tokenText(config.eos_token);
    const eos = new Set(options.eosTokenIds ?? []);
    const eosId = this.eosToken === undefined ? undefined : this.inner.token_to_id(this.eosToken);
    if (eosId !== undefined) eos.add(eosId);
    this.eosTokenIds = [...eos].sort((a, b) => a - b);
    const template = config.chat_template;
    if (typeof template === "string") {
      try {
        this.template = new Template(template);
      } catch (cause) {
        throw new BringupError(
          "CHAT_TEMPLATE_INVALID",
          `the chat_template in tokenizer_config.json does not parse: ${(cause as Error).message}`,
          {
            subject: "tokenizer_config.json",
            cause,
          },
        );
      }
    }
  }

  get hasChatTemplate(): boolean {
    return this.template !== undefined;
  }

  encode(text: string, options: { readonly addSpecialTokens?: boolean } = {}): number[] {
    return this.inner.encode(text, { add_special_tokens: options.addSpecialTokens ?? true }).ids;
  }

  decode(ids: readonly number[], options: { readonly skipSpecialTokens?: boolean } = {}): string {
    for (const id of ids) this.checkId(id);
    if (ids.length === 0) return "";
    return this.inner.decode([...ids], {
      skip_special_tokens: options.skipSpecialTokens ?? false,
      clean_up_tokenization_spaces: false,
    });
  }

  /** The text of one token on its own (as logprob entries show it); special tokens included. */
  tokenText(id: number): string {
    this.checkId(id);
    let text = this.tokenTexts[id];
    if (text === undefined) {
      text = this.decode([id]);
      this.tokenTexts[id] = text;
    }
    return text;
  }

  /** The vocabulary's own string for a token (e.g. "Ġthe"), as HF's convert_ids_to_tokens gives it. */
  vocabToken(id: number): string {
    this.checkId(id);
    return this.inner.id_to_token(id) ?? "";
  }

  isSpecial(id: number): boolean {
    return this.specialIds.has(id);
  }

  /** Renders messages through the model's chat template; throws NO_CHAT_TEMPLATE if it has none. */
  applyChatTemplate(messages: readonly ChatMessage[], options: ChatTemplateOptions = {}): string {
    const context = this.chatTemplateContext(messages, options.addGenerationPrompt ?? true);
    if (options.template !== undefined) return renderRequestTemplate(options.template, context);
    if (this.template === undefined) {
      throw new BringupError(
        "NO_CHAT_TEMPLATE",
        "this model's tokenizer_config.json has no chat_template; use the completions API instead.",
      );
    }
    try {
      return this.template.render(context);
    } catch (cause) {
      throw new BringupError(
        "CHAT_TEMPLATE_FAILED",
        `the chat template failed on these messages: ${(cause as Error).message}`,
        { cause },
      );
    }
  }

  /**
   * What a chat template is rendered with: the messages, add_generation_prompt and the special
   * tokens' texts (so a template can be rendered elsewhere, e.g. on a thread under a budget).
   */
  chatTemplateContext(messages: readonly ChatMessage[], addGenerationPrompt: boolean): ChatTemplateContext {
    return {
      messages: messages.map((m) => ({ role: m.role, content: m.content })),
      add_generation_prompt: addGenerationPrompt,
      bos_token: this.bosToken ?? "",
      eos_token: this.eosToken ?? "",
    };
  }

  /** A detokenizer that turns a stream of ids into text deltas, holding back incomplete characters. */
  createDetokenizer(options: { readonly skipSpecialTokens?: boolean } = {}): IncrementalDetokenizer {
    return new IncrementalDetokenizer(this, options.skipSpecialTokens ?? true);
  }

  private checkId(id: number): void {
    if (!Number.isInteger(id) || id < 0 || id >= this.size) {
      throw new BringupError(
        "TOKEN_OUT_OF_RANGE",
        `token id ${id} is outside the vocabulary (0..${this.size - 1}).`,
      );
    }
  }
}

/**
 * Renders a request's own Jinja chat template (vLLM's per-request chat_template) with `context`;
 * its errors are CHAT_TEMPLATE_INVALID or CHAT_TEMPLATE_FAILED with the subject "chat_template".
 */
export function renderRequestTemplate(text: string, context: ChatTemplateContext): string {
  let template: Template;
  try {
    template = new Template(text);
  } catch (cause) {
    throw new BringupError(
      "CHAT_TEMPLATE_INVALID",
      `the chat_template does not parse as Jinja: ${(cause as Error).message}; fix it or leave it out to use the model's.`,
      { subject: "chat_template", cause },
    );
  }
  try {
    return template.render(context);
  } catch (cause) {
    throw new BringupError(
      "CHAT_TEMPLATE_FAILED",
      `the request's chat_template failed on these messages: ${(cause as Error).message}; fix it or leave it out to use the model's.`,
      { subject: "chat_template", cause },
    );
  }
}

/**
 * Streams text from token ids the way vLLM does: decode a short window of recent ids and emit only
 * what is new, waiting while the tail is an incomplete UTF-8 sequence (shown as U+FFFD).
 */
export class IncrementalDetokenizer {
  private readonly ids: number[] = [];
  private prefixOffset = 0;
  private readOffset = 0;

  constructor(
    private readonly tokenizer: TextTokenizer,
    private readonly skipSpecialTokens: boolean,
  ) {}

  /** Adds one id and returns the text it completes (possibly empty). */
  push(id: number): string {
    this.ids.push(id);
    const opts = { skipSpecialTokens: this.skipSpecialTokens };
    const prefix = this.tokenizer.decode(this.ids.slice(this.prefixOffset, this.readOffset), opts);
    const full = this.tokenizer.decode(this.ids.slice(this.prefixOffset), opts);
    if (full.length > prefix.length && !full.endsWith("\uFFFD")) {
      this.prefixOffset = this.readOffset;
      this.readOffset = this.ids.length;
      return full.slice(prefix.length);
    }
    return "";
  }

  /** Whatever is still held back (an incomplete character at the end of the stream). */
  flush(): string {
    const opts = { skipSpecialTokens: this.skipSpecialTokens };
    const prefix = this.tokenizer.decode(this.ids.slice(this.prefixOffset, this.readOffset), opts);
    const full = this.tokenizer.decode(this.ids.slice(this.prefixOffset), opts);
    this.prefixOffset = this.readOffset = this.ids.length;
    return full.slice(prefix.length);
  }
}

function tokenText(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { content?: unknown }).content === "string"
  ) {
    return (value as { content: string }).content;
  }
  return undefined;
}
