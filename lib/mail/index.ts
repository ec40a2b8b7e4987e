export { mailer, MailDeliveryError, type Mailer, type MailerOptions, type SmtpOptions, type SentMail } from './mailer';
export {
  DEFAULT_MAIL_TEMPLATES,
  type MailBase,
  type MailData,
  type MailKind,
  type MailLink,
  type MailNotice,
  type MailTemplates,
  type RenderedMail,
} from './mail-templates';
